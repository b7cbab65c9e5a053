// What the SDK scripts (e2b_sdk.mjs, e2b_code_sdk.mjs) share: each step prints one JSON line
// {"step", "t": seconds since the start, ...}; throws are caught as {threw, name, message, e}
// for the harness to check. Copied next to them into the SDK's folder by their harness.
const t0 = Date.now()
export const now = () => (Date.now() - t0) / 1000
export const report = (step, fields) => console.log(JSON.stringify({ step, t: now(), ...fields }))
export const errorOf = (e) => ({ name: e?.constructor?.name, message: String(e?.message ?? e) })
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

export async function expectThrow(fn) {
  try {
    const v = await fn()
    return { threw: false, value: v }
  } catch (e) {
    return { threw: true, ...errorOf(e), e }
  }
}
