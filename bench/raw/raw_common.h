/* SPDX-License-Identifier: MIT */
/* Socket helpers of the raw TCP peer programs (127.0.0.1 only). */
#ifndef RAPT_BENCH_RAW_COMMON_H
#define RAPT_BENCH_RAW_COMMON_H

#include <stddef.h>

int raw_listen(unsigned int *port, int backlog);
int raw_accept(int lfd);
int raw_connect(unsigned int port);
int raw_nodelay(int fd);
int raw_write_full(int fd, const void *buf, size_t len);
int raw_read_full(int fd, void *buf, size_t len);
int raw_read_spin(int fd, void *buf, size_t len);

#endif /* RAPT_BENCH_RAW_COMMON_H */
