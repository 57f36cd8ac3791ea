"""`kafkasim app [--port 8501] [--host 127.0.0.1]`: start the Streamlit app (localhost only unless --host says
otherwise)."""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

APP_FILE = Path(__file__).resolve().parent / "streamlit_app.py"


def streamlit_command(port: int, host: str, headless: bool = True) -> list[str]:
    return [sys.executable, "-m", "streamlit", "run", str(APP_FILE),
            "--server.port", str(port), "--server.address", host,
            "--server.headless", "true" if headless else "false",
            "--browser.gatherUsageStats", "false"]


def cmd_app(args: argparse.Namespace) -> int:
    command = streamlit_command(args.port, args.host, headless=not args.open)
    print(f"kafkasim: the app is at http://{args.host}:{args.port}/ (Ctrl-C stops it)", file=sys.stderr)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 0


def add_app_command(subparsers) -> None:
    """Add `app` to the `kafkasim` subcommands."""
    p = subparsers.add_parser("app", help="start the Streamlit app (Explore and Compare) in the browser")
    p.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    p.add_argument("--open", action="store_true", help="also open a browser window")
    p.set_defaults(func=cmd_app)
