#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-siw-vm.sh - the "interop" suite of rapt's VM suite alone: the tcp
# provider against a librdmacm program on the Linux kernel's siw.
# usage: tests/interop/run-siw-vm.sh BUILD_DIR   (as root; tests/vm/run-vm.sh)
exec env SUITES="${SUITES:-interop}" \
	"$(dirname "${BASH_SOURCE[0]}")/../vm/run-vm.sh" "$@"
