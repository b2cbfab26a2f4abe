/* SPDX-License-Identifier: MIT */
/*
 * rapt provider toolkit: a provider's own threads (<rapt/provider_util.h>).
 *
 * A provider thread must not run the application's signal handlers (an
 * engine thread interrupted by a SIGALRM meant for the consumer), so it
 * starts with the asynchronous signals blocked.  The faults a thread
 * raises itself stay deliverable: Linux kills a process outright when
 * such a fault comes with its signal blocked, without running any
 * handler, so a crash in a provider thread would leave no sanitizer
 * report, no crash reporter's stack, nothing but "Segmentation fault".
 */
#include "config.h"

#include <pthread.h>
#include <signal.h>

#include <rapt/provider_util.h>

/* The signals a thread raises by its own fault: never blocked. */
static const int fault_signals[] = {
	SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS,
};

/* Every signal blocked but the faults. */
static void thread_sigmask(sigset_t *set)
{
	size_t i;

	sigfillset(set);
	for (i = 0; i < sizeof(fault_signals) / sizeof(fault_signals[0]); i++)
		sigdelset(set, fault_signals[i]);
}

/* rapt_thread_create - kernel-doc in <rapt/provider_util.h> */
int rapt_thread_create(pthread_t *thread, const pthread_attr_t *attr,
		       void *(*fn)(void *), void *arg)
{
	sigset_t mask, old;
	int err;

	/* The new thread inherits the mask in force at pthread_create(). */
	thread_sigmask(&mask);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	err = pthread_create(thread, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
