"""``granular view``: the live viewer in the browser, or a run file played back."""
from __future__ import annotations

from granular.apps.commands.common import _number
from granular.errors import GranularError


def add(sub):
    v = sub.add_parser("view", help="the live viewer in the browser (or --replay a run file)")
    v.add_argument("scenario", nargs="?", default="quad-trot")
    v.add_argument("--medium", help="sand, pebbles, beads (wheels: wheel-sand, wheel-dry-sand), or a model "
                                    "file (.h5): planar for a planar scenario or a --replay's W(θ) plot, 3D "
                                    "(sand3d, …) for a 3D one")
    v.add_argument("--replay", help="play back a run file (.h5)")
    v.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    v.add_argument("--port", type=_number(1, 65535, kind=int), default=8080, help="1 to 65535")
    v.add_argument("--no-browser", action="store_true", help="do not open a browser")
    v.set_defaults(func=cmd_view)


def cmd_view(args):
    import socket

    from granular.apps import network, viewer

    with socket.socket() as s:
        try:
            s.bind((args.host, args.port))
        except OSError as exc:
            raise GranularError(f"cannot serve on {args.host}:{args.port} ({exc.strerror or exc}); "
                                "choose another --port or --host") from None
    network.warn_if_exposed(args.host, args.port)
    viewer.serve(args.scenario, medium=args.medium, replay=args.replay, host=args.host, port=args.port,
                 browser=not args.no_browser)
