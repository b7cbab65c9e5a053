/* Figures behind the code kernel's JSON bounds (code_wire.h, issue 25): the stack jansson's
 * parse, compact dump and decref take per level of nesting, measured on a painted stack, and
 * how much a value can grow when dumped. Prints figures and one JSON line; never judges them.
 * Run: ctest --test-dir build -R bench_json_stack -V */
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAINTED_STACK_BYTES ((size_t) 8 << 20)
#define PAINT 0xA5
#define CONN_STACK_BYTES ((size_t) 512 << 10) /* hostd/http: HTTP_THREAD_STACK_BYTES */

typedef enum { OP_PARSE, OP_DUMP, OP_DECREF, OP_N } Op;

typedef struct {
    Op op;
    const char *text;
    json_t *value;
} Job;

static void *
job_main(void *arg)
{
    Job *j = arg;
    if (j->op == OP_PARSE)
        j->value = json_loads(j->text, 0, NULL);
    else if (j->op == OP_DUMP)
        free(json_dumps(j->value, JSON_COMPACT));
    else
        json_decref(j->value);
    return NULL;
}

/* The deepest the job's thread wrote into a painted stack, in bytes. */
static size_t
stack_used(Job *j)
{
    unsigned char *stack;
    pthread_attr_t attr;
    pthread_t t;
    if (posix_memalign((void **) &stack, 4096, PAINTED_STACK_BYTES) != 0)
        abort();
    memset(stack, PAINT, PAINTED_STACK_BYTES);
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, stack, PAINTED_STACK_BYTES);
    if (pthread_create(&t, &attr, job_main, j) != 0 || pthread_join(t, NULL) != 0)
        abort();
    pthread_attr_destroy(&attr);
    size_t untouched = 0;
    while (untouched < PAINTED_STACK_BYTES && stack[untouched] == PAINT)
        untouched++;
    free(stack);
    return PAINTED_STACK_BYTES - untouched;
}

/* "[[...0...]]" or {"a":{"a":...0...}} nested depth deep. */
static char *
nested(unsigned depth, bool object)
{
    char *t = malloc(6 * depth + 2), *p = t;
    if (!t)
        abort();
    for (unsigned i = 0; i < depth; i++)
        p = stpcpy(p, object ? "{\"a\":" : "[");
    *p++ = '0';
    for (unsigned i = 0; i < depth; i++)
        *p++ = object ? '}' : ']';
    *p = '\0';
    return t;
}

static void
measure(unsigned depth, bool object, size_t ret[OP_N])
{
    char *text = nested(depth, object);
    Job j = {.op = OP_PARSE, .text = text};
    ret[OP_PARSE] = stack_used(&j);
    if (!j.value)
        abort();
    j.op = OP_DUMP;
    ret[OP_DUMP] = stack_used(&j);
    j.op = OP_DECREF;
    ret[OP_DECREF] = stack_used(&j);
    free(text);
}

int
main(void)
{
    static const unsigned depths[] = {1, 64, 1000, 2000};
    static const char *const names[OP_N] = {"parse", "dump", "decref"};
    size_t at[2][4][OP_N];
    double dump_per_level = 0;

    for (int object = 0; object < 2; object++) {
        for (size_t d = 0; d < 4; d++) {
            measure(depths[d], object, at[object][d]);
            printf("%-6s depth %4u: parse %6zu  dump %6zu  decref %6zu bytes of stack\n",
                   object ? "object" : "array", depths[d], at[object][d][OP_PARSE],
                   at[object][d][OP_DUMP], at[object][d][OP_DECREF]);
        }
        for (int op = 0; op < OP_N; op++) {
            double per = (double) (at[object][3][op] - at[object][2][op]) / 1000.0;
            printf("%-6s %-6s: %.0f bytes a level\n", object ? "object" : "array", names[op], per);
            if (op == OP_DUMP && per > dump_per_level)
                dump_per_level = per;
        }
    }
    double fits = (double) (CONN_STACK_BYTES - at[0][0][OP_DUMP]) / dump_per_level;
    printf("a 512 KiB thread dumps at most ~%.0f levels; 64 levels cost ~%.0f bytes\n", fits,
           64 * dump_per_level);

    /* growth when dumped: reals as short as JSON writes them, dumped as %.17g */
    size_t n = 100000;
    char *text = malloc(5 * n + 2), *p = text;
    *p++ = '[';
    for (size_t i = 0; i < n; i++)
        p = stpcpy(p, i ? ",1e-7" : "1e-7");
    strcpy(p, "]");
    json_t *v = json_loads(text, 0, NULL);
    size_t dumped = v ? json_dumpb(v, NULL, 0, JSON_COMPACT) : 0;
    double growth = (double) dumped / (double) strlen(text);
    printf("[1e-7,...] of %zu: %zu bytes as text, %zu dumped (x%.2f)\n", n, strlen(text), dumped,
           growth);
    json_decref(v);
    free(text);
    printf("{\"dump_bytes_per_level\": %.0f, \"conn_stack_levels\": %.0f, "
           "\"real_dump_growth\": %.2f}\n",
           dump_per_level, fits, growth);
    return 0;
}
