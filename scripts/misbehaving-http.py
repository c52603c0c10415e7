#!/usr/bin/env python3
"""HTTP servers that misbehave the ways a hostile or broken OTLP endpoint
can, for the tests of `coldstart push` (Tests/ColdstartTests/Export/PushTests.swift).
Standard library only. Each listens on ADDRESS (a loopback address) at a free
port, prints the port as the first line of standard output, answers every
POST as its MODE says, and exits by itself after 120 s.

  misbehaving-http.py ADDRESS record OUT.jsonl
      200 with an empty body; appends {"path", "authorization", "bodyBytes"}
      of each request to OUT.jsonl.
  misbehaving-http.py ADDRESS redirect STATUS URL
      STATUS (307, 308, 301…) with Location: URL.
  misbehaving-http.py ADDRESS drip SECONDS
      200 with Content-Length 1000, then one byte every SECONDS.
  misbehaving-http.py ADDRESS huge MIB
      200 with a body of MIB mebibytes (Content-Length), sent as fast as it
      is read.
  misbehaving-http.py ADDRESS huge-chunked MIB
      The same without a length: chunked transfer encoding.
  misbehaving-http.py ADDRESS hostile
      500 whose body holds a NUL, terminal escape sequences, a carriage
      return and bytes that are not UTF-8.
"""
import http.server
import json
import sys
import threading
import time


def main():
    address, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                if mode == "record":
                    with open(args[0], "a") as out:
                        out.write(json.dumps({"path": self.path, "authorization": self.headers.get("Authorization"),
                                              "bodyBytes": len(body)}) + "\n")
                    self.answer(200, b"")
                elif mode == "redirect":
                    self.send_response(int(args[0]))
                    self.send_header("Location", args[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif mode == "drip":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    for _ in range(1000):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(float(args[0]))
                elif mode in ("huge", "huge-chunked"):
                    size = int(args[0]) << 20
                    chunked = mode == "huge-chunked"
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-protobuf")
                    self.send_header("Transfer-Encoding" if chunked else "Content-Length", "chunked" if chunked else str(size))
                    self.end_headers()
                    chunk = b"\0" * (1 << 20)
                    for _ in range(size >> 20):
                        self.wfile.write(b"100000\r\n" + chunk + b"\r\n" if chunked else chunk)
                    if chunked:
                        self.wfile.write(b"0\r\n\r\n")
                elif mode == "hostile":
                    self.answer(500, b"bad\0news \x1b[31mred\x1b[0m\r\x1b]0;title\x07 caf\xe9 \xe2\x80\xaeevil")
            except (BrokenPipeError, ConnectionResetError):
                pass

        def answer(self, status, body):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer((address, 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    threading.Timer(120, server.shutdown).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
