"""Many event-stream sessions opening and closing while messages are sent (`scripts/stress-events`).

Three connections post `!ping` messages as the person, 8 pipelined at a time; twelve threads each
open `GET /v3/events`, read for 10 to 500 ms, and close (half of them with a shutdown), over and
over. Prints what got through: posts answered 200, other answers, stream sessions, bytes read.
Arguments: port, API key, seconds.
"""
import socket, threading, time, random, json, os, sys
PORT=int(sys.argv[1]); KEY=sys.argv[2]; DURATION=float(sys.argv[3])
stop=time.time()+DURATION
stats={"posts":0,"post_err":0,"sse_cycles":0,"sse_bytes":0}
lock=threading.Lock()
def poster(lane):
    s=socket.create_connection(("127.0.0.1",PORT)); f=s.makefile("rb")
    i=0
    while time.time()<stop:
        batch=[]
        for _ in range(8):
            body=json.dumps({"receiver":"room","receiverType":"group","data":{"text":f"!ping {lane*1000000+i}"}})
            batch.append(f"POST /v3/messages HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: {KEY}\r\nonBehalfOf: human\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}")
            i+=1
        s.sendall("".join(batch).encode())
        for _ in range(8):
            status=f.readline(); length=0
            while True:
                h=f.readline()
                if h in (b"\r\n",b""): break
                if h.lower().startswith(b"content-length:"): length=int(h.split(b":")[1])
            f.read(length)
            with lock:
                if b" 200 " in status: stats["posts"]+=1
                else: stats["post_err"]+=1
def sse():
    while time.time()<stop:
        try:
            s=socket.create_connection(("127.0.0.1",PORT))
            s.sendall(f"GET /v3/events HTTP/1.1\r\nHost: 127.0.0.1\r\napikey: {KEY}\r\nonBehalfOf: human\r\n\r\n".encode())
            end=time.time()+random.uniform(0.01,0.5); n=0
            s.settimeout(0.2)
            while time.time()<end:
                try: n+=len(s.recv(65536))
                except socket.timeout: pass
            if random.random()<0.5: s.shutdown(socket.SHUT_RDWR)
            s.close()
            with lock: stats["sse_cycles"]+=1; stats["sse_bytes"]+=n
        except Exception as e:
            with lock: stats["sse_errors"]=stats.get("sse_errors",0)+1
ts=[threading.Thread(target=poster,args=(l,)) for l in range(3)]+[threading.Thread(target=sse) for _ in range(12)]
[t.start() for t in ts]; [t.join() for t in ts]
print(stats)
