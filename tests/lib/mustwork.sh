# Shell twin of testlib.h's test_skip: source it, then `skip "why"`.
# Exits 77 (ctest SKIPPED), or 1 when STOCKADE_MUST_WORK=1 (CI), so CI never skips.
skip() {
    if [ "${STOCKADE_MUST_WORK:-}" = 1 ]; then
        echo "FAIL (STOCKADE_MUST_WORK=1, cannot skip): $*" >&2
        exit 1
    fi
    echo "SKIP: $*" >&2
    exit 77
}
