// Command jobsubmit queues ingestion jobs on a NATS JetStream server the way
// `kgagent serve` queues a POST /api/v1/corpora (crawler/natsjobs, the same
// stream, bucket and job secret), waits until every job has finished, and
// prints each job's final status as one JSON line. It exits 1 when a job
// did not succeed. deploy/bench-cluster.sh uses it to hand jobs to
// `kgagent worker` processes, which have no HTTP API.
//
//	jobsubmit -nats URLS -secret S -collection C [-max-pages N] URL[,URL...] ...
//
// Each argument is one job; its comma-separated URLs are the job's spec
// (a trailing * crawls everything under the prefix).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/kgagent/kgagent/crawler"
	"github.com/kgagent/kgagent/crawler/natsjobs"
)

func main() {
	url := flag.String("nats", "", "NATS URLs (comma-separated)")
	secret := flag.String("secret", "", "the workers' job secret (job_secret)")
	collection := flag.String("collection", "", "collection of every job")
	maxPages := flag.Int("max-pages", 0, "page limit of each job (0: the workers' crawl_max_pages)")
	timeout := flag.Duration("timeout", 2*time.Hour, "give up after this long")
	flag.Parse()
	if *url == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: jobsubmit -nats URLS -secret S -collection C [-max-pages N] URL[,URL...] ...")
		os.Exit(2)
	}
	if err := run(*url, *secret, *collection, *maxPages, *timeout, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "jobsubmit:", err)
		os.Exit(1)
	}
}

func run(url, secret, collection string, maxPages int, timeout time.Duration, jobs []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	q, err := natsjobs.New(ctx, nc, natsjobs.Config{SecretKey: []byte(secret)})
	if err != nil {
		return err
	}
	var ids []string
	for _, j := range jobs {
		st, err := q.Submit(ctx, crawler.Spec{Collection: collection, URLs: strings.Split(j, ","), MaxPages: maxPages})
		if err != nil {
			return err
		}
		ids = append(ids, st.ID)
	}
	failed := 0
	for _, id := range ids {
		for {
			st, err := q.Get(ctx, id)
			if err != nil {
				return err
			}
			if st.State == crawler.JobSucceeded || st.State == crawler.JobFailed || st.State == crawler.JobCanceled {
				b, _ := json.Marshal(st)
				fmt.Println(string(b))
				if st.State != crawler.JobSucceeded {
					failed++
				}
				break
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d jobs did not succeed", failed, len(ids))
	}
	return nil
}
