#!/usr/bin/env python3
"""Decodes OTLP traces with the official `opentelemetry-proto` package, for
the tests of `coldstart push` and `coldstart export --format otlp`
(docs/fleet.md). Needs scripts/ensure-python-deps.sh's interpreter.

  otlp-receiver.py serve OUT.jsonl
      An OTLP/HTTP receiver on 127.0.0.1 (a free port, printed as the first
      line of standard output). Each POST to /v1/traces must be
      application/x-protobuf; its ExportTraceServiceRequest is decoded and
      appended to OUT.jsonl as one line of JSON, and an empty
      ExportTraceServiceResponse is returned. Anything else gets 400/404.
      Runs until killed.

  otlp-receiver.py parse FILE.otlp.json
      Parses OTLP/JSON into ExportTraceServiceRequest with
      google.protobuf.json_format.Parse (unknown fields are errors) and
      prints it as the same JSON `serve` writes.

OTLP/JSON writes trace and span ids as hex where the protobuf JSON mapping
reads base64: `parse` turns them into base64 first, as the OTLP spec tells
receivers to. Output writes ids as hex.
"""
import base64
import http.server
import json
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

ID_KEYS = ("traceId", "spanId", "parentSpanId")


def convert_ids(node, convert):
    if isinstance(node, dict):
        return {k: (convert(v) if k in ID_KEYS and isinstance(v, str) else convert_ids(v, convert))
                for k, v in node.items()}
    if isinstance(node, list):
        return [convert_ids(v, convert) for v in node]
    return node


def to_json(request):
    as_dict = json_format.MessageToDict(request)
    return convert_ids(as_dict, lambda v: base64.b64decode(v).hex())


def parse(path):
    with open(path) as f:
        document = json.load(f)
    document = convert_ids(document, lambda v: base64.b64encode(bytes.fromhex(v)).decode())
    request = trace_service_pb2.ExportTraceServiceRequest()
    json_format.Parse(json.dumps(document), request, ignore_unknown_fields=False)
    print(json.dumps(to_json(request), sort_keys=True))


def serve(out_path):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/traces":
                return self.reply(404, b"not found")
            if self.headers.get("Content-Type") != "application/x-protobuf":
                return self.reply(400, b"want application/x-protobuf")
            request = trace_service_pb2.ExportTraceServiceRequest()
            try:
                request.ParseFromString(body)
            except Exception as error:  # a malformed body is the test's finding
                return self.reply(400, str(error).encode())
            record = {"headers": {k.lower(): v for k, v in self.headers.items()}, "request": to_json(request)}
            with open(out_path, "a") as out:
                out.write(json.dumps(record, sort_keys=True) + "\n")
            self.reply(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString(),
                       "application/x-protobuf")

        def reply(self, status, body, content_type="text/plain"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("serve", "parse"):
        sys.exit(__doc__)
    (serve if sys.argv[1] == "serve" else parse)(sys.argv[2])
