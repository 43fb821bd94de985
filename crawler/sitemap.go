package crawler

import (
	"bytes"
	"compress/gzip"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kgagent/kgagent"
	"github.com/temoto/robotstxt"
)

// Sitemap limits: how deep indexes may nest and how many sitemaps one crawl
// reads.
const (
	maxSitemapDepth = 3
	maxSitemaps     = 50
)

// sitemaps reads the sitemaps of the hosts of the glob seeds (the Sitemap
// lines of robots.txt, else /sitemap.xml) and queues their URLs that fall
// under a glob prefix. Relative <loc>s are resolved against the sitemap's
// URL (the sitemap protocol wants absolute ones; being lenient costs nothing).
func (cr *crawl) sitemaps(seeds []Seed) {
	hc := cr.aux
	done := map[string]bool{}
	var queue []struct {
		u     string
		depth int
	}
	roots := map[string]bool{}
	for _, s := range seeds {
		if !s.Glob {
			continue
		}
		pu, err := url.Parse(s.URL)
		if err != nil {
			continue
		}
		root := pu.Scheme + "://" + pu.Host
		if roots[root] {
			continue
		}
		roots[root] = true
		found := false
		if body, ok := cr.robotsBody[root]; ok {
			if rd, err := robotstxt.FromBytes(body); err == nil {
				for _, sm := range rd.Sitemaps {
					if abs := resolveLink(pu, sm); abs != "" {
						queue = append(queue, struct {
							u     string
							depth int
						}{abs, 0})
						found = true
					}
				}
			}
		}
		if !found {
			queue = append(queue, struct {
				u     string
				depth int
			}{root + "/sitemap.xml", 0})
		}
	}
	for len(queue) > 0 && len(done) < maxSitemaps && cr.ctx.Err() == nil {
		item := queue[0]
		queue = queue[1:]
		if done[item.u] {
			continue
		}
		done[item.u] = true
		body, ok := cr.get(hc, item.u)
		if !ok {
			continue
		}
		base, _ := url.Parse(item.u)
		index, locs := parseSitemap(body)
		for _, loc := range locs {
			abs := resolveLink(base, loc)
			if abs == "" {
				continue
			}
			if index {
				if item.depth+1 < maxSitemapDepth {
					queue = append(queue, struct {
						u     string
						depth int
					}{abs, item.depth + 1})
				}
				continue
			}
			if n, err := NormalizeURL(abs); err == nil {
				cr.enqueue(n, 0, false)
			}
		}
	}
}

// readRobots fetches the robots.txt of every seed's host once before the
// crawl: its Sitemap lines feed sitemaps, and a host whose robots.txt
// answers 5xx or cannot be reached is remembered, because colly then treats
// every page as disallowed and such pages must count as failed, not as
// excluded (which would remove them from the index).
func (cr *crawl) readRobots(seeds []Seed) {
	cr.robotsBody, cr.robotsDown = map[string][]byte{}, map[string]PageError{}
	cr.aux = cr.httpClient()
	hc := cr.aux
	for _, s := range seeds {
		pu, err := url.Parse(s.URL)
		if err != nil {
			continue
		}
		root := pu.Scheme + "://" + pu.Host
		if _, done := cr.robotsBody[root]; done {
			continue
		}
		if _, done := cr.robotsDown[pu.Host]; done {
			continue
		}
		status, body, err := cr.fetchAux(hc, root+"/robots.txt")
		switch {
		case err != nil:
			code, reason := classify(err)
			cr.robotsDown[pu.Host] = PageError{Code: code, Reason: reason}
		case status >= 500:
			cr.robotsDown[pu.Host] = PageError{Code: kgagent.EUNAVAILABLE, Reason: "robots.txt unavailable (HTTP " + strconv.Itoa(status) + ")"}
		case status == http.StatusOK:
			cr.robotsBody[root] = body
		default:
			cr.robotsBody[root] = nil
		}
	}
}

func (cr *crawl) robotsDownFor(u string) (PageError, bool) {
	pu, err := url.Parse(u)
	if err != nil {
		return PageError{}, false
	}
	pe, ok := cr.robotsDown[pu.Host]
	return pe, ok
}

func (cr *crawl) httpClient() *http.Client {
	return &http.Client{
		Transport: newTransport(cr.cfg, 2),
		Timeout:   cr.cfg.RequestTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 || !cr.scope.hostAllowed(req.URL.Host) {
				return http.ErrUseLastResponse
			}
			return nil
		},
	}
}

// get fetches a small auxiliary file (robots.txt, a sitemap); false on any
// failure, which only means fewer URLs are discovered.
func (cr *crawl) get(hc *http.Client, u string) ([]byte, bool) {
	status, body, err := cr.fetchAux(hc, u)
	if err != nil || status != http.StatusOK {
		return nil, false
	}
	return body, true
}

// fetchAux GETs a small auxiliary file and returns its status and body
// (gunzipped when it is gzip).
func (cr *crawl) fetchAux(hc *http.Client, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(cr.ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("User-Agent", cr.cfg.UserAgent)
	if cr.spec.BearerToken != "" && cr.scope.hostAllowed(req.URL.Host) {
		req.Header.Set("Authorization", "Bearer "+cr.spec.BearerToken)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, cr.cfg.MaxBodyBytes))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return resp.StatusCode, nil, err
		}
		body, err = io.ReadAll(io.LimitReader(zr, cr.cfg.MaxBodyBytes))
		if err != nil {
			return resp.StatusCode, nil, err
		}
	}
	return resp.StatusCode, body, nil
}

// parseSitemap reads a <urlset> or a <sitemapindex>; it returns whether it
// was an index and the <loc> values in order. Malformed XML yields what was
// read before the error.
func parseSitemap(body []byte) (index bool, locs []string) {
	dec := xml.NewDecoder(bytes.NewReader(body))
	dec.Strict = false
	inLoc := false
	var cur strings.Builder
	for {
		tok, err := dec.Token()
		if err != nil {
			return index, locs
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "sitemapindex":
				index = true
			case "loc":
				inLoc = true
				cur.Reset()
			}
		case xml.CharData:
			if inLoc && cur.Len() < maxURLLength {
				cur.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "loc" && inLoc {
				inLoc = false
				if s := strings.TrimSpace(cur.String()); s != "" {
					locs = append(locs, s)
				}
				if len(locs) >= 50000 {
					return index, locs
				}
			}
		}
	}
}
