/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer targets (docs/fuzzing.md).  Each target defines
 * LLVMFuzzerTestOneInput; a violated invariant calls fuzz_fail(), which
 * aborts so libFuzzer keeps the input as a crash.
 */
#ifndef RAPT_FUZZ_FUZZ_H
#define RAPT_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define fuzz_check(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant broken: %s\n", \
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

#endif /* RAPT_FUZZ_FUZZ_H */
