/* JSON renderings of stored records for the API (pure; any thread). */
#pragma once

#include <jansson.h>

#include "store.h"

/* {"seq","ts","type","exec_id"?,"data"|"data_b64"?, ...attrs}. Output bytes that are valid
 * UTF-8 go in "data"; anything else in "data_b64". Attrs are parsed only when
 * store_event_attrs_parsable(); otherwise the event has "attrs_withheld": true instead. */
json_t *render_event(const EventRecord *e);
/* {"id","kind","pool","state","end_reason"?,"created_at","started_at"?,"ended_at"?,
 *  "timeout_s","exit_code"?,"output_bytes","artifacts":{...},"last_seq","events_suppressed"} */
json_t *render_session(const SessionRecord *r);
/* RFC 3339 UTC with milliseconds: "2026-11-29T22:10:00.123Z". out >= 32 bytes. */
void render_time(int64_t wall_usec, char *out, size_t cap);
