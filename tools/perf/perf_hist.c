/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf latency histograms: four buckets per doubling, from 0.5 us up,
 * so that a tail shows its shape (one slow cluster, or a long smear), not
 * only its p99.  Filled from the sorted samples by perf_stats().
 */
#include "config.h"

#include <stdio.h>

#include "perf.h"

#define HIST_BASE_NS	500u	/* bucket 0: below it */

/* The bucket of @ns: 0 below HIST_BASE_NS, then 4 per doubling. */
static unsigned int hist_bucket(uint64_t ns)
{
	unsigned int oct = 0, sub;
	uint64_t lo = HIST_BASE_NS;

	if (ns < lo)
		return 0;
	while (ns >= 2 * lo && oct < (PERF_HIST_N - 1) / 4) {
		lo *= 2;
		oct++;
	}
	sub = (unsigned int)((ns - lo) * 4 / lo);
	return 1 + 4 * oct + sub < PERF_HIST_N ? 1 + 4 * oct + sub :
						 PERF_HIST_N - 1;
}

/* The lower edge of bucket @b, in nanoseconds. */
static double hist_lower_ns(unsigned int b)
{
	double lo = HIST_BASE_NS;

	if (!b)
		return 0;
	b--;
	for (; b >= 4; b -= 4)
		lo *= 2;
	return lo * (1 + b / 4.0);
}

/**
 * perf_hist_fill - count @n samples into @row's histogram
 * @ns: the samples, nanoseconds, any order
 * @n: how many
 * @row: the row
 */
void perf_hist_fill(const uint64_t *ns, uint64_t n, struct perf_row *row)
{
	uint64_t i;

	for (i = 0; i < PERF_HIST_N; i++)
		row->hist[i] = 0;
	for (i = 0; i < n; i++)
		row->hist[hist_bucket(ns[i])]++;
}

/* Text: one line per non-empty bucket, a bar by share. */
static void hist_table(const struct perf_row *r)
{
	uint64_t total = 0, cum = 0;
	unsigned int b, k, bar;

	for (b = 0; b < PERF_HIST_N; b++)
		total += r->hist[b];
	if (!total)
		return;
	printf("# round trips, us: from, count, share, cumulative\n");
	for (b = 0; b < PERF_HIST_N; b++) {
		if (!r->hist[b])
			continue;
		cum += r->hist[b];
		printf("# %10.2f %10llu %6.2f%% %7.3f%% ",
		       hist_lower_ns(b) / 1e3,
		       (unsigned long long)r->hist[b],
		       100.0 * (double)r->hist[b] / (double)total,
		       100.0 * (double)cum / (double)total);
		/* at least one mark for any count: the rare slow ones are
		 * the point */
		bar = (unsigned int)(40 * r->hist[b] / total);
		for (k = 0; k < (bar ? bar : 1); k++)
			putchar(bar ? '#' : '.');
		putchar('\n');
	}
}

/* JSON: ,"hist":[[from_us,count],...] over the non-empty buckets. */
static void hist_json(const struct perf_row *r)
{
	const char *sep = "";
	unsigned int b;

	printf(",\"hist\":[");
	for (b = 0; b < PERF_HIST_N; b++) {
		if (!r->hist[b])
			continue;
		printf("%s[%.3f,%llu]", sep, hist_lower_ns(b) / 1e3,
		       (unsigned long long)r->hist[b]);
		sep = ",";
	}
	printf("]");
}

/**
 * perf_hist_print - print @row's histogram
 * @row: a latency row
 * @json: as a JSON member (inside the row's object), else as text
 */
void perf_hist_print(const struct perf_row *row, bool json)
{
	if (json)
		hist_json(row);
	else
		hist_table(row);
}
