"""Print what a client of the lab meets at its one address, the front door (a chat completion, a streamed
completion, a JSON-mode reply, a wrong key refused), then per lab host its tuned state (from the drift
report), a sample streamed completion with tokens/s (the median of SAMPLES completions, which only a host's
own port can say) and a JSON-mode reply, through the lab's forwarded ports on 127.0.0.1.

Usage: python scripts/lab_sample.py INVENTORY_JSON DRIFT_REPORT_JSON
"""

import json
import sys
import time

import openai

API_KEY = "lab-secret-not-for-production"
GUEST_PORT = "8081"
FRONTDOOR_PORT = "9081"
SAMPLES = 3
TOKENS = 16
# JSON mode with a schema, as an operator's tool would ask: the generated models' weights are random, so
# an open "any object" can run to max_tokens inside a string. This closed schema bounds the reply: about
# 20 tokens of content, and the grammar's whitespace between them (at most 22 characters in each of its
# 5 places, one token each for these tokenizers) - so JSON_TOKENS always lets it close.
JSON_TOKENS = 256
STATE_SCHEMA = {"type": "object", "properties": {"state": {"enum": ["serving", "tuned", "idle"]}},
                "required": ["state"], "additionalProperties": False}


def client_of(port, api_key=API_KEY):
    return openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key=api_key, timeout=300, max_retries=1)


def sample(port):
    client = client_of(port)
    started = time.monotonic()
    first = None
    pieces = []
    stream = client.completions.create(model="tiny-llama", prompt="The inference server says", max_tokens=TOKENS,
                                       stream=True, extra_body={"ignore_eos": True})
    for chunk in stream:
        if not chunk.choices or not chunk.choices[0].text:
            continue  # llama-server closes the stream with an empty chunk that carries the finish reason
        if first is None:
            first = time.monotonic()
        pieces.append(chunk.choices[0].text)
    done = time.monotonic()
    tokens = len(pieces)
    # end to end: events may arrive in bursts, so a first-to-last span would inflate the rate
    rate = tokens / (done - started)
    return "".join(pieces), tokens, (first - started) * 1000 if first else 0.0, rate


def json_reply(port):
    """The content of a chat completion in JSON mode (response_format json_object), as the server sent it."""
    reply = client_of(port).chat.completions.create(
        model="tiny-llama", max_tokens=JSON_TOKENS, temperature=0,
        messages=[{"role": "user", "content": "The service state, as JSON."}],
        response_format={"type": "json_object", "schema": STATE_SCHEMA})
    return reply.choices[0].message.content


def wrong_key(port):
    """What the front door answers a client with a wrong key: the engines' 401, passed through."""
    try:
        client_of(port, "not-the-key").completions.create(model="tiny-llama", prompt="x", max_tokens=1)
    except openai.AuthenticationError as error:
        return "refused, HTTP %d" % error.status_code
    return "ACCEPTED (the key is not checked)"


def frontdoor(lab):
    """The one address of the model: a chat completion, a streamed completion, JSON mode and a wrong key."""
    names = sorted(lab.get("children", {}).get("frontdoor", {}).get("hosts", {}))
    if not names:
        return
    port = lab["hosts"][names[0]]["lab_forwarded_ports"][FRONTDOOR_PORT]
    print("== front door http://127.0.0.1:%d/v1 (HAProxy on %s, model tiny-llama, in front of %s)"
          % (port, names[0], ", ".join(sorted(lab["hosts"]))))
    chat = client_of(port).chat.completions.create(model="tiny-llama", max_tokens=12, temperature=0,
                                                   messages=[{"role": "user", "content": "Say hello."}])
    print("   chat completion: %r" % chat.choices[0].message.content)
    text, tokens, first_ms, rate = sample(port)
    print("   streamed completion: %d tokens, first token %.0f ms, %.2f tokens/s end to end: %r" % (tokens, first_ms, rate, text))
    print("   json mode: %s" % " ".join(json_reply(port).splitlines()))
    print("   wrong key: %s" % wrong_key(port))


def main():
    inventory = json.load(open(sys.argv[1], encoding="utf-8"))
    report = json.load(open(sys.argv[2], encoding="utf-8"))
    lab = inventory["all"]["children"]["lab"]
    frontdoor(lab)
    hosts = lab["hosts"]
    for name in sorted(hosts):
        settings = report.get(name, [])
        drifted = [s["setting"] for s in settings if not s["in_sync"]]
        print("== %s (%s)" % (name, hosts[name]["lab_arch"]))
        for setting in settings:
            print("   %-50s %s" % (setting["setting"], setting["actual"]))
        print("   drift: %s" % (", ".join(drifted) or "none"))
        port = hosts[name]["lab_forwarded_ports"].get(GUEST_PORT)
        if port is None:
            print("   inference: none on this host")
            continue
        runs = sorted((sample(port) for dummy in range(SAMPLES)), key=lambda run: run[3])
        text, tokens, first_ms, rate = runs[len(runs) // 2]
        print("   sample completion: %r" % text)
        print("   %d tokens, first token %.0f ms, %.2f tokens/s end to end, median of %d (%s; software-emulated CPU)"
              % (tokens, first_ms, rate, SAMPLES, " ".join("%.2f" % run[3] for run in runs)))
        # JSON's whitespace may hold newlines; on one line the reply stays the same JSON
        print("   json mode: %s" % " ".join(json_reply(port).splitlines()))


if __name__ == "__main__":
    main()
