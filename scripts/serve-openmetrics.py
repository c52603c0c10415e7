#!/usr/bin/env python3
"""Serves one metrics file on 127.0.0.1 (a free port, printed first) as
Prometheus would scrape a target: GET /metrics with the OpenMetrics
content type, so the scraper parses it with its OpenMetrics parser (which
insists on `# EOF`). For the tests of `coldstart aggregate --format
openmetrics` (docs/fleet.md). Usage: serve-openmetrics.py FILE"""
import http.server
import sys


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404)
            return
        with open(sys.argv[1], "rb") as f:
            body = f.read()
        self.send_response(200)
        self.send_header("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if len(sys.argv) != 2:
    sys.exit(__doc__)
server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
