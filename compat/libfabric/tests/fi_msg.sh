#!/bin/sh
# SPDX-License-Identifier: MIT
# The libfabric MSG test (fi_msg_test.c) over rapt's tcp provider on
# loopback, through the rapt libfabric provider of this build tree.
# Skips (77) only when configure found no libfabric development files.
prog=compat/libfabric/tests/fi_msg_test
if [ ! -x "$prog" ]; then
	echo "SKIP: libfabric development files were absent at configure" \
		"(apt-get install libfabric-dev)"
	exit 77
fi
FI_PROVIDER_PATH=$(pwd)/compat/libfabric/.libs
FI_RAPT_IA=tcp:lo
RAPT_PROVIDER=tcp
export FI_PROVIDER_PATH FI_RAPT_IA RAPT_PROVIDER
exec timeout 300 "$prog"
