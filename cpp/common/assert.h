// TC_ASSERT(cond, msg): a check of an internal invariant (sorted fields, an index in range, a pre
// matched by its post), active in Debug builds (scripts/run_sanitizers.sh builds Debug) and free in
// Release (NDEBUG): the condition is not evaluated there, so it may cost what it must.
//
// Never for user input: a bad trace or invariant file gets an error naming file, line and field
// (docs/README.md §Architecture). A failed assertion names the source line and aborts, so a sanitizer or test run
// stops at the first broken invariant instead of computing on from it.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace traincheck::detail {

[[noreturn]] inline void assertion_failed(const char* condition, const char* message, const char* file, int line) {
  std::fprintf(stderr, "%s:%d: internal error: %s (assertion '%s' failed)\n", file, line, message, condition);
  std::abort();
}

}  // namespace traincheck::detail

#ifdef NDEBUG
// sizeof: names in the condition count as used (no unused-variable warnings), nothing is evaluated.
#define TC_ASSERT(cond, msg) static_cast<void>(sizeof((cond) ? 1 : 0))
#else
#define TC_ASSERT(cond, msg) \
  ((cond) ? static_cast<void>(0) : ::traincheck::detail::assertion_failed(#cond, msg, __FILE__, __LINE__))
#endif
