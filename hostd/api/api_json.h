/* The API's body field parsers (api_json.c): pure (jansson, base, the runner's limits), so
 * their fuzzer links nothing else. Each checks type and bound of one field and fails with
 * E_INVALID naming it. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "task_input.h"

int api_json_argv(json_t *v, char ***ret_argv, size_t *ret_argc, Error **errp);
int api_json_env(json_t *v, EnvPair **ret_env, size_t *ret_n, Error **errp);
int api_json_timeout(json_t *obj, const char *key, uint64_t *ret_usec, Error **errp);
int api_json_files(json_t *v, TaskFile **ret, size_t *ret_n, Error **errp);
void api_free_argv(char **argv, size_t argc);
void api_free_env(EnvPair *env, size_t n);
void api_free_files(TaskFile *f, size_t n);
