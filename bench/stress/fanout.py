"""Server CPU a message with many live streams in one room (`scripts/bench-fanout`).

N users join one group, each with an SSE stream open (`GET /v3/events`), all read by one selector
loop; then alice posts M messages of about 240 bytes one after another. Prints the server's CPU
time over the posts (from /proc/PID/stat) divided by the messages, and how many frames arrived.
Arguments: base URL, API key, the host's pid, N, M.
"""
import json, os, selectors, socket, sys, threading, time, urllib.request

BASE, KEY, PID, N, M = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


def call(method, path, body=None, who=None):
    headers = {"apikey": KEY, "Content-Type": "application/json"}
    if who:
        headers["onBehalfOf"] = who
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(BASE + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read() or b"null")


def cpu_seconds():
    fields = open(f"/proc/{PID}/stat").read().split(")")[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


for i in range(N):
    call("POST", "/v3/users", {"uid": f"u{i}", "name": f"U{i}"})
call("POST", "/v3/groups", {"guid": "fan", "name": "Fan", "type": "public"}, who="alice")
for start in range(0, N, 100):
    members = [f"u{i}" for i in range(start, min(N, start + 100))]
    call("POST", "/v3/groups/fan/members", {"participants": members}, who="alice")

host, port = BASE.split("//")[1].split(":")
selector = selectors.DefaultSelector()
for i in range(N):
    stream = socket.create_connection((host, int(port)))
    stream.sendall(
        f"GET /v3/events HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: {KEY}\r\nonBehalfOf: u{i}\r\n"
        "Accept: text/event-stream\r\n\r\n".encode())
    stream.setblocking(False)
    selector.register(stream, selectors.EVENT_READ)
frames = [0]
done = threading.Event()


def read():
    while not done.is_set():
        for key, _ in selector.select(0.1):
            try:
                frames[0] += key.fileobj.recv(65536).count(b"event: onTextMessageReceived")
            except BlockingIOError:
                pass


threading.Thread(target=read, daemon=True).start()
time.sleep(1)
before, started = cpu_seconds(), time.time()
for i in range(M):
    text = f"hello everyone, message {i} " + "x" * 200
    call("POST", "/v3/messages", {"receiver": "fan", "receiverType": "group", "data": {"text": text}}, who="alice")
deadline = time.time() + 30
while frames[0] < N * M and time.time() < deadline:
    time.sleep(0.05)
after = cpu_seconds()
done.set()
print(json.dumps({
    "streams": N, "messages": M, "frames": frames[0],
    "server_cpu_ms_per_message": round((after - before) * 1000 / M, 3),
    "seconds": round(time.time() - started, 2),
}))
