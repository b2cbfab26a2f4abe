#!/bin/sh
# Regenerate the build system (configure, Makefile.in) from a git checkout.
set -e
cd "$(dirname "$0")"
mkdir -p m4
autoreconf --install --force --warnings=all
