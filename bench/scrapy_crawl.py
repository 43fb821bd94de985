"""The Scrapy side of `make bench`: a minimal spider that crawls a site the way
kgagent's crawler does (start at the root, follow every link under it, HTML
pages only, robots.txt obeyed) and extracts each page's title and text, so the
two crawl the same pages. It prints one JSON object: pages crawled.

    python bench/scrapy_crawl.py http://127.0.0.1:PORT/ [--max-pages N]

--max-pages N stops after about N pages (Scrapy's CLOSESPIDER_PAGECOUNT:
requests in flight finish, so a few more may be counted), as kgagent's
--max-pages does for the scale curve (deploy/bench-scale.sh).
"""

import json
import sys

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy.http import HtmlResponse

SKIP = (".txt", ".zip", ".tar", ".bz2", ".gz", ".pdf", ".png", ".jpg", ".svg", ".js", ".css", ".epub", ".inv")


class DocsSpider(scrapy.Spider):
    name = "docs"

    def __init__(self, root, stats, **kw):
        super().__init__(**kw)
        self.start_urls = [root]
        self.root = root
        self.stats = stats

    def parse(self, response):
        if not isinstance(response, HtmlResponse):
            return
        self.stats["pages"] += 1
        title = response.css("title::text").get(default="")
        text = " ".join(t.strip() for t in response.css("body ::text").getall() if t.strip())
        self.stats["chars"] += len(title) + len(text)
        for href in response.css("a::attr(href)").getall():
            url = response.urljoin(href).split("#", 1)[0]
            if url.startswith(self.root) and not url.lower().endswith(SKIP):
                yield scrapy.Request(url, callback=self.parse)


def main():
    root = sys.argv[1]
    settings = {}
    if len(sys.argv) > 3 and sys.argv[2] == "--max-pages":
        settings["CLOSESPIDER_PAGECOUNT"] = int(sys.argv[3])
    stats = {"pages": 0, "chars": 0}
    process = CrawlerProcess(settings={
        **settings,
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": True,
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
    })
    process.crawl(DocsSpider, root=root, stats=stats)
    process.start()
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
