#!/bin/sh
# sh _readme_build.sh OUT "Frozen at ..." : rebuild README.md from a generated OUT
cd "$(dirname "$0")" && { cat _readme_head.md; /work/main/.venv/bin/python _readme.py "$1"; cat _readme_tail.md _readme_read.md; printf '\n%s\n' "$2"; } > README.md
