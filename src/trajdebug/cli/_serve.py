"""``trajdebug serve``: the local web UI."""

from __future__ import annotations

import click

from trajdebug.cli._common import fmt_option, source_argument, store_path


@click.command(name="serve")
@source_argument
@fmt_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="Port (0: any free one).")
@click.option(
    "--token",
    metavar="TOKEN",
    envvar="TRAJDEBUG_TOKEN",
    help="Require this token from every request (default: none on 127.0.0.1; generated and "
    "printed for any other --host).",
)
def serve_cmd(source: str | None, fmt: str | None, host: str, port: int, token: str | None) -> None:
    """Browse runs in a local web UI: the run list, each run's report, two runs compared.

    SOURCE is a store (read live: runs recorded while the server is up appear
    in the list), a trajdebug JSONL file or a foreign trace (default: the
    default store).  The server listens on 127.0.0.1 only; with --host set to
    any other address it requires a token, printed in the URL to open.

    \b
    Example:
        trajdebug serve
        trajdebug serve runs.jsonl --port 9000
    """
    try:
        from trajdebug.serve import Server
    except ImportError as exc:
        raise click.ClickException(
            f"the web UI needs the 'serve' extra: pip install 'trajdebug[serve]' ({exc})"
        ) from None
    from pathlib import Path

    path = store_path(source)
    if not Path(path).exists():
        raise click.ClickException(f"{path}: no such file (record a run, or try: trajdebug demo)")
    try:
        server = Server(path, host=host, port=port, fmt=fmt, token=token)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    click.echo(f"trajdebug: serving {path} at {server.url}  (Ctrl-C stops)")
    if server.token:
        click.echo("every request needs that token: share the URL only with whom may see these runs")
    server.run()


def register(cli: click.Group) -> None:
    """Add ``serve``."""
    cli.add_command(serve_cmd)
