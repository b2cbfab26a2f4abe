// SPDX-License-Identifier: MIT
/*
 * An MPI program for two ranks: a ping-pong from 1 byte to 4 MiB with
 * every byte verified at both ends, then MPI_Allreduce and MPI_Alltoall
 * over 1 byte to 4 MiB, checked element by element.  With --perf it
 * prints the 8-byte half round trip and the 1 MiB streaming bandwidth
 * instead (docs/libfabric.md).  Run by mpi.sh over "rapt;ofi_rxm".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEN		(4u << 20)
#define ITERS		10

static int rank, nranks;

static void fail(const char *what, size_t len, size_t at)
{
	fprintf(stderr, "FAIL rank %d: %s, %zu bytes, at %zu\n", rank, what,
		len, at);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

static uint8_t pattern(size_t i, unsigned int seed)
{
	return (uint8_t)(seed * 13 + i * 7 + (i >> 9));
}

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern(i, seed);
}

static void verify(const uint8_t *p, size_t len, unsigned int seed,
		   const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern(i, seed))
			fail(what, len, i);
}

static void pingpong(uint8_t *a, uint8_t *b)
{
	unsigned int seed = 1;
	size_t len;
	int i;

	for (len = 1; len <= MAX_LEN; len *= 2) {
		for (i = 0; i < ITERS; i++, seed++) {
			if (rank == 0) {
				fill(a, len, seed);
				MPI_Send(a, (int)len, MPI_BYTE, 1, i,
					 MPI_COMM_WORLD);
				memset(b, 0, len);
				MPI_Recv(b, (int)len, MPI_BYTE, 1, i,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				verify(b, len, seed + 1000, "pong data");
			} else {
				memset(b, 0, len);
				MPI_Recv(b, (int)len, MPI_BYTE, 0, i,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				verify(b, len, seed, "ping data");
				fill(a, len, seed + 1000);
				MPI_Send(a, (int)len, MPI_BYTE, 0, i,
					 MPI_COMM_WORLD);
			}
		}
	}
}

static void allreduce(int *in, int *out)
{
	size_t n, i;

	for (n = 1; n <= MAX_LEN / sizeof(int); n *= 4) {
		for (i = 0; i < n; i++)
			in[i] = (int)(i * 3 + (size_t)rank * 1000003);
		MPI_Allreduce(in, out, (int)n, MPI_INT, MPI_SUM,
			      MPI_COMM_WORLD);
		for (i = 0; i < n; i++) {
			long want = 0;
			int r;

			for (r = 0; r < nranks; r++)
				want += (long)(i * 3 + (size_t)r * 1000003);
			if (out[i] != (int)want)
				fail("allreduce sum", n * sizeof(int), i);
		}
	}
}

static void alltoall(uint8_t *a, uint8_t *b)
{
	size_t len, i;
	int r;

	for (len = 1; len * (size_t)nranks <= MAX_LEN; len *= 4) {
		for (r = 0; r < nranks; r++)
			fill(a + r * len, len, (unsigned int)(rank * 64 + r));
		memset(b, 0, len * (size_t)nranks);
		MPI_Alltoall(a, (int)len, MPI_BYTE, b, (int)len, MPI_BYTE,
			     MPI_COMM_WORLD);
		for (r = 0; r < nranks; r++)
			for (i = 0; i < len; i++)
				if (b[r * len + i] !=
				    pattern(i, (unsigned int)(r * 64 + rank)))
					fail("alltoall block", len, i);
	}
}

/* Half round trip of 8 bytes, and 1 MiB messages streamed 64 at a time. */
static void perf(uint8_t *a, uint8_t *b)
{
	MPI_Request req[64];
	const int lat_iters = 20000, bw_iters = 20, window = 64;
	size_t bw_len = 1u << 20;
	double t0 = 0, lat, bw;
	int i, j;

	for (i = -1000; i < lat_iters; i++) {
		if (i == 0)
			t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(a, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
			MPI_Recv(b, 8, MPI_BYTE, 1, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(b, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(a, 8, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
		}
	}
	lat = (MPI_Wtime() - t0) / lat_iters / 2 * 1e6;
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < bw_iters; i++) {
		for (j = 0; j < window; j++) {
			if (rank == 0)
				MPI_Isend(a + (j % 4) * bw_len, (int)bw_len,
					  MPI_BYTE, 1, j, MPI_COMM_WORLD,
					  &req[j]);
			else
				MPI_Irecv(b + (j % 4) * bw_len, (int)bw_len,
					  MPI_BYTE, 0, j, MPI_COMM_WORLD,
					  &req[j]);
		}
		MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
		if (rank == 0)
			MPI_Recv(b, 1, MPI_BYTE, 1, 99, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		else
			MPI_Send(a, 1, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
	}
	bw = (double)bw_len * window * bw_iters / (MPI_Wtime() - t0) / 1e6;
	if (rank == 0)
		printf("PERF latency_8B_us=%.2f bandwidth_1MiB_MBps=%.0f\n",
		       lat, bw);
}

int main(int argc, char **argv)
{
	uint8_t *a, *b;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	if (nranks != 2) {
		if (rank == 0)
			fprintf(stderr, "FAIL: run with 2 ranks\n");
		MPI_Finalize();
		return 1;
	}
	a = malloc(MAX_LEN);
	b = malloc(MAX_LEN);
	if (!a || !b)
		fail("malloc", MAX_LEN, 0);
	if (argc > 1 && !strcmp(argv[1], "--perf")) {
		perf(a, b);
	} else {
		pingpong(a, b);
		allreduce((int *)a, (int *)b);
		alltoall(a, b);
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0)
			printf("PASS: ping-pong, allreduce, alltoall, "
			       "1 B..4 MiB\n");
	}
	free(a);
	free(b);
	MPI_Finalize();
	return 0;
}
