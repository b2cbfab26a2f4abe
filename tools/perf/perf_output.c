/* SPDX-License-Identifier: MIT */
/*
 * rapt_perf output: a readable table, or with --json one JSON object per
 * line (one per message size), flat, with the same fields every time.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "perf.h"

static const char *role_name(enum perf_role r)
{
	switch (r) {
	case PERF_ROLE_FORK: return "fork";
	case PERF_ROLE_THREAD: return "thread";
	case PERF_ROLE_SERVER: return "server";
	case PERF_ROLE_CLIENT: return "client";
	}
	return "?";
}

static const char *verify_name(int v)
{
	return v < 0 ? "off" : v ? "ok" : "FAIL";
}

void perf_out_header(const struct perf_opts *o, const struct perf_side *s)
{
	enum perf_test t = o->test;

	if (o->json)
		return;
	printf("# rapt_perf %s on %s (provider %s), mode %s, %s\n",
	       perf_test_name(t), s->attr.name, s->attr.provider,
	       perf_mode_name(o->mode),
	       o->role == PERF_ROLE_FORK ? "server and client processes" :
	       o->role == PERF_ROLE_THREAD ? "server thread, one process" :
	       "client of a remote server");
	if (perf_is_latency(t)) {
		printf("# round-trip times in microseconds%s\n",
		       o->unsignaled ? " (1 send in 16 signalled; a round "
		       "trip ends with the reply)" :
		       t == PERF_LAT_READ ? " (one read = one round trip)" :
		       t == PERF_LAT_MW ? " (bind, the server's write into "
		       "the window and its Send with Invalidate)" :
		       "; one-way is half");
		if (o->think_us)
			printf("# the client pauses %llu us between round "
			       "trips (not counted), calling no rapt function\n",
			       (unsigned long long)o->think_us);
		printf("#%11s %10s %9s %9s %9s %9s %7s\n", "bytes", "iters",
		       "min", "median", "p99", "mean", "verify");
	} else if (!perf_is_conn(t)) {
		printf("# MB/s = 10^6 bytes/s delivered to the server's "
		       "memory\n");
		printf("#%11s %10s %6s %10s %8s %9s %10s %7s\n", "bytes", "ops",
		       "window", "MB/s", "Gbit/s", "Mmsg/s", "local MB/s",
		       "verify");
	}
	fflush(stdout);
}

static void table_conn(const struct perf_opts *o, const struct perf_row *r)
{
	if (o->test == PERF_CONNRATE) {
		printf("%-28s %10llu\n", "connections",
		       (unsigned long long)r->iters);
		printf("%-28s %10llu B each way\n", "private data",
		       (unsigned long long)r->bytes);
		printf("%-28s %10.0f /s\n", "connection rate", r->conn_per_s);
		printf("%-28s %10.2f us (p99 %.2f)\n", "cycle, median",
		       r->cycle_med / 1e3, r->cycle_p99 / 1e3);
		printf("%-28s %10.2f us (p99 %.2f)\n",
		       "connect to ESTABLISHED", r->connect_med / 1e3,
		       r->connect_p99 / 1e3);
		printf("%-28s %10.2f us\n", o->disc_wait ?
		       "disconnect to DISCONNECTED" : "disconnect and free",
		       r->disc_med / 1e3);
		printf("%-28s %10llu / %llu\n", "server ESTABLISHED / DISC.",
		       (unsigned long long)r->srv_est,
		       (unsigned long long)r->srv_disc);
	} else {
		printf("%-28s %10llu (", "connections held",
		       (unsigned long long)r->iters);
		if (r->window)
			printf("%u connects outstanding at most)\n", r->window);
		else
			printf("every connect at once)\n");
		printf("%-28s %10.2f ms (%.0f /s)\n", "all ESTABLISHED in",
		       r->connect_all_ms, r->conn_per_s);
		printf("%-28s %10.0f B client, %.0f B server%s\n",
		       "memory per connection", r->cli_per_conn,
		       r->srv_per_conn, o->role == PERF_ROLE_THREAD ?
		       " (one process: each figure is both sides)" : "");
		printf("%-28s %10.2f client, %.2f server\n",
		       "fds per connection", r->cli_fds, r->srv_fds);
		printf("%-28s %10llu\n", "BUSY rejects retried",
		       (unsigned long long)r->busy);
		printf("%-28s %10.2f ms\n", "all torn down in",
		       r->close_all_ms);
	}
	printf("%-28s %10s\n", "verify", verify_name(r->verified));
}

static void table_row(const struct perf_opts *o, const struct perf_row *r)
{
	if (perf_is_conn(o->test)) {
		table_conn(o, r);
	} else if (perf_is_latency(o->test)) {
		printf("%12llu %10llu %9.2f %9.2f %9.2f %9.2f %7s\n",
		       (unsigned long long)r->bytes,
		       (unsigned long long)r->iters, r->min / 1e3,
		       r->med / 1e3, r->p99 / 1e3, r->mean / 1e3,
		       verify_name(r->verified));
		if (o->hist) {
			printf("# p99.9 %.2f us, max %.2f us\n",
			       r->p999 / 1e3, r->max / 1e3);
			perf_hist_print(r, false);
		}
	} else {
		printf("%12llu %10llu %6u %10.1f %8.2f %9.4f %10.1f %7s\n",
		       (unsigned long long)r->bytes,
		       (unsigned long long)r->iters, r->window, r->mbps,
		       r->mbps * 8 / 1e3, r->msg_per_s / 1e6, r->local_mbps,
		       verify_name(r->verified));
	}
	fflush(stdout);
}

static void json_head(const struct perf_opts *o, const char *ia,
		      const char *prov)
{
	printf("{\"tool\":\"rapt_perf\",\"test\":\"%s\",\"ia\":\"%s\","
	       "\"provider\":\"%s\",\"mode\":\"%s\",\"role\":\"%s\"",
	       perf_test_name(o->test), ia, prov, perf_mode_name(o->mode),
	       role_name(o->role));
	if (o->unsignaled)
		printf(",\"unsignaled\":true");
	if (o->think_us)
		printf(",\"think_us\":%llu", (unsigned long long)o->think_us);
}

static void json_conn(const struct perf_opts *o, const struct perf_row *r)
{
	printf(",\"conns\":%llu,\"pdata\":%llu,\"window\":%u,"
	       "\"conn_per_s\":%.0f", (unsigned long long)r->iters,
	       (unsigned long long)r->bytes, r->window, r->conn_per_s);
	if (o->test == PERF_CONNRATE) {
		printf(",\"cycle_med_us\":%.2f,\"cycle_p99_us\":%.2f,"
		       "\"connect_med_us\":%.2f,\"connect_p99_us\":%.2f,"
		       "\"disc_med_us\":%.2f,\"srv_established\":%llu,"
		       "\"srv_disconnected\":%llu", r->cycle_med / 1e3,
		       r->cycle_p99 / 1e3, r->connect_med / 1e3,
		       r->connect_p99 / 1e3, r->disc_med / 1e3,
		       (unsigned long long)r->srv_est,
		       (unsigned long long)r->srv_disc);
		return;
	}
	printf(",\"connect_all_ms\":%.2f,\"per_conn_B\":%.0f,"
	       "\"srv_per_conn_B\":%.0f,\"fds_per_conn\":%.2f,"
	       "\"srv_fds_per_conn\":%.2f,\"rss_base_kb\":%ld,"
	       "\"srv_rss_base_kb\":%ld,\"busy_retries\":%llu,"
	       "\"close_all_ms\":%.2f,\"rss_scope\":\"%s\"",
	       r->connect_all_ms, r->cli_per_conn, r->srv_per_conn,
	       r->cli_fds, r->srv_fds, r->cli_rss_base, r->srv_rss_base,
	       (unsigned long long)r->busy, r->close_all_ms,
	       o->role == PERF_ROLE_THREAD ? "process" : "side");
}

static void json_row(const struct perf_opts *o, const struct perf_side *s,
		     const struct perf_row *r)
{
	json_head(o, s->attr.name, s->attr.provider);
	if (perf_is_conn(o->test)) {
		json_conn(o, r);
	} else if (perf_is_latency(o->test)) {
		printf(",\"bytes\":%llu,\"iters\":%llu,\"rtt_min_us\":%.2f,"
		       "\"rtt_med_us\":%.2f,\"rtt_p99_us\":%.2f,"
		       "\"rtt_p999_us\":%.2f,\"rtt_max_us\":%.2f,"
		       "\"rtt_mean_us\":%.2f", (unsigned long long)r->bytes,
		       (unsigned long long)r->iters, r->min / 1e3,
		       r->med / 1e3, r->p99 / 1e3, r->p999 / 1e3,
		       r->max / 1e3, r->mean / 1e3);
		if (o->hist)
			perf_hist_print(r, true);
	} else {
		printf(",\"bytes\":%llu,\"ops\":%llu,\"window\":%u,"
		       "\"MBps\":%.1f,\"Gbps\":%.3f,\"msg_per_s\":%.0f,"
		       "\"local_MBps\":%.1f", (unsigned long long)r->bytes,
		       (unsigned long long)r->iters, r->window, r->mbps,
		       r->mbps * 8 / 1e3, r->msg_per_s, r->local_mbps);
	}
	printf(",\"verify\":\"%s\",\"status\":\"%s\"}\n",
	       r->verified < 0 ? "off" : r->verified ? "ok" : "fail",
	       r->verified == 0 ? "fail" : "ok");
	fflush(stdout);
}

void perf_out_row(const struct perf_opts *o, const struct perf_side *s,
		  const struct perf_row *row)
{
	if (o->json)
		json_row(o, s, row);
	else
		table_row(o, row);
}

void perf_out_error(const struct perf_opts *o, const char *status,
		    const char *why)
{
	if (!o->json)
		return;
	json_head(o, o->ia_name ? o->ia_name : "", "");
	printf(",\"status\":\"%s\",\"error\":\"%s\"}\n", status, why);
	fflush(stdout);
}
