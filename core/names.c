/* SPDX-License-Identifier: MIT */
/*
 * Names of event types and EP states, generated from the lists in rapt.h
 * that also generate their enums (RAPT_EVENT_TYPE_MAP, RAPT_EP_STATE_MAP),
 * so a name cannot drift from its value.  A value listed twice does not
 * compile: its switch below would have a duplicate case.
 */
#include "config.h"

#include "rapt_int.h"

/* One case of either list: the enumerator's name without its prefix. */
#define NAME_CASE(name, val) case (val): return #name;

RAPT_API const char *rapt_event_name(uint32_t type)
{
	switch (type) {
	RAPT_EVENT_TYPE_MAP(NAME_CASE)
	}
	return "UNKNOWN";
}

RAPT_API const char *rapt_ep_state_name(uint32_t state)
{
	switch (state) {
	RAPT_EP_STATE_MAP(NAME_CASE)
	}
	return "UNKNOWN";
}
