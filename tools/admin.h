/* What the admin verbs share (tenants, quota, usage, tokens): calls under /v1/admin, a
 * tenant named by its name or its id, answers as "key value" lines. */
#pragma once

#include <jansson.h>

#include "args.h"
#include "cli.h"
#include "error.h"

#define ADMIN_TENANT_ARG_MAX_BYTES 64 /* a tenant's name (the daemon's bound) or its id */

/* One admin call. The exit code: 0, or what cli_report said after printing the error (a 404
 * of the whole admin API is said plainly: the daemon is too old). */
int admin_call(Cli *cli, const char *method, const char *path, json_t *body, json_t **ret);

/* The tenant an operand names, in the daemon's list {"tenants": [{"id","name","removed_at"?}]}
 * (removed ones included). A live tenant whose id or name it is wins; then a removed one
 * (its ledger stays readable); ambiguous when it is one live tenant's id and another's name,
 * or the name of several removed ones (E_CONFLICT: use the id); E_NOT_FOUND when none.
 * ret_id gets the id, checked to be one the CLI may put in a path. Pure. */
int admin_tenant_pick(json_t *list, const char *arg, char ret_id[ARGS_ID_MAX_BYTES + 1],
                      Error **errp);

/* admin_tenant_pick over GET /v1/admin/tenants?removed=1. Returns 0, or an exit code after
 * printing the error. */
int admin_tenant_resolve(Cli *cli, const char *arg, char ret_id[ARGS_ID_MAX_BYTES + 1]);

/* An answer as "key value" lines; nested objects flattened to dotted keys
 * ("sessions.open"), arrays as compact JSON; everything escaped. */
void admin_print_kv(json_t *o);
