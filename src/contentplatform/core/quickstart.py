"""The quick start: one bash script, from a token to a post published on a signed webhook on
this machine, printed at the top of the README and of the API description (/docs, with the
service's own address), and run by a test as printed, ten times in a row.

It waits for what it depends on instead of sleeping a guessed time: each step polls what it
needs (a document ready, a draft to review, the receiver listening, the publish attempt ended),
at most 240 tries half a second apart, and says what it gave up on. The receiver starts, and
answers, before anything is published to it, and stops only once the attempt has ended, so
nothing is left to be delivered to a later run's receiver.
"""

from __future__ import annotations

README_API = "http://127.0.0.1:8000"
README_DEV_PY = "/path/to/checkout/dev.py"
HOOK_PORT = 9000

_SCRIPT = r"""API=@API@; HOOK_PORT=@HOOK_PORT@
TOKEN=$(python3 @DEV_PY@ token --org org_a --user u1 --role admin)
H=(-H "Authorization: Bearer $TOKEN" -H "x-idp-org-id: org_a" -H "content-type: application/json")
pick() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }
# wait_for PATH PATTERN: until GET $API/PATH answers something matching PATTERN (2 minutes)
wait_for() { for _ in $(seq 240); do [[ $(curl -s "$API$1" "${H[@]}") =~ $2 ]] && return
  sleep 0.5; done; echo "gave up waiting for $2 at $1" >&2; return 1; }
curl -s $API/v1/system/whoami "${H[@]}"; echo
# a knowledge document: where to PUT it, the bytes, confirm; wait until it is ready
printf '# Watering\n\nWater early in the morning, twice a week, and deeply.\n' > notes.md
UP=$(curl -s $API/v1/documents/upload-url "${H[@]}" \
  -d '{"filename":"notes.md","fileType":"md","contentLength":'$(wc -c < notes.md)'}')
curl -s -X PUT "$(echo "$UP" | pick "['upload_url']")" --data-binary @notes.md \
  -H "Content-Type: $(echo "$UP" | pick "['headers']['Content-Type']")" > /dev/null
DOC=$(curl -s $API/v1/documents/confirm-upload "${H[@]}" -d '{"filename":"notes.md","fileType":"md",
  "storagePath":"'$(echo "$UP" | pick "['storage_path']")'"}' | pick "['id']")
wait_for /v1/documents/$DOC '"status":"ready"'
# a job, run now: it writes a draft from the document, which waits for review; approve it
JOB=$(curl -s $API/v1/jobs "${H[@]}" -d '{"name":"Garden","topics":["Watering"]}' | pick "['id']")
curl -s -X POST $API/v1/jobs/$JOB/trigger "${H[@]}" > /dev/null
wait_for "/v1/drafts?jobId=$JOB&status=reviewing" '"id"'
DRAFT=$(curl -s "$API/v1/drafts?jobId=$JOB" "${H[@]}" | pick "['data'][0]['id']")
curl -s -X POST $API/v1/drafts/$DRAFT/approve "${H[@]}" -d '{}' | pick "['status']"
# publish it to a webhook on this machine: a receiver printing each signed POST, listening first
python3 -c "import http.server as s, json
class R(s.BaseHTTPRequestHandler):
    def do_POST(self):
        event = json.loads(self.rfile.read(int(self.headers['content-length'])))
        signed = self.headers['webhook-signature'][:12]
        print('received', event['type'], event['data']['draft_id'], signed, flush=True)
        self.send_response(200); self.end_headers()
    def do_GET(self): self.send_response(204); self.end_headers()
    def log_message(self, *args): pass
s.HTTPServer(('127.0.0.1', $HOOK_PORT), R).serve_forever()" & HOOK=$!
until curl -s -o /dev/null http://127.0.0.1:$HOOK_PORT/; do sleep 0.2; done
CONN=$(curl -s $API/v1/publishers "${H[@]}" -d '{"name":"Local hook '$HOOK_PORT'","type":"webhook",
  "config":{"url":"http://127.0.0.1:'$HOOK_PORT'/hook"}}' | pick "['id']")
curl -s -X POST $API/v1/drafts/$DRAFT/publish "${H[@]}" \
  -d '{"publisherConnectionId":"'$CONN'"}' > /dev/null
wait_for /v1/drafts/$DRAFT/publish-attempts '"status":"(succeeded|failed)"'
curl -s $API/v1/drafts/$DRAFT/publish-attempts "${H[@]}" | pick "['data'][0]['status']"
kill $HOOK   # the receiver printed the article.published event of $DRAFT
"""


def script(api: str = README_API, dev_py: str = README_DEV_PY, hook_port: int = HOOK_PORT) -> str:
    """The quick start against the service at `api`, minting its token with the `dev.py` at
    `dev_py`, its receiver on `hook_port`."""
    return (
        _SCRIPT.replace("@API@", api)
        .replace("@DEV_PY@", dev_py)
        .replace("@HOOK_PORT@", str(hook_port))
    )
