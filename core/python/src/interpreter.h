// Internal: the one embedded CPython interpreter of the process, and the budgets of rule calls.
//
// The interpreter starts on first use, isolated (no environment variables, no site, no user
// site-packages, fixed hash seed 0 so set/dict-of-str orders repeat), with Debian's standard
// library (ATTRIBUTION_PYTHON_HOME), and is never finalized. Every use holds an InterpreterLock:
// a process-wide mutex plus the GIL, so exactly one thread runs Python at a time and the budget
// counters below need no atomics.
//
// Budgets (per call, deterministic where Python allows):
//   time   — trace events (calls, lines, backward jumps) counted by a C trace function; past the
//            limit every further event raises attribution.BudgetExceeded (a BaseException, which
//            rules may not catch: the loader rejects bare `except:` and `except BaseException`).
//            A single long C-level call (a huge sum(range(...)), a pathological regex) is not
//            interrupted: the count only advances between Python-level steps.
//   memory — bytes net-allocated through the PyMem/PyObject allocators (all Python objects),
//            counted by wrapping them; past the limit an allocation fails (MemoryError).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include <Python.h>

namespace attribution::python {

struct Budget {
  uint64_t trace_events = 2'000'000;    // ~0.5 s of plain Python on this project's CI machine
  int64_t memory_bytes = 64LL << 20;    // 64 MiB
};

// Holds the interpreter (mutex + GIL) for its lifetime; starts the interpreter on first use.
// ok() is false (with error()) when the interpreter could not start; nothing may be called then.
class InterpreterLock {
 public:
  InterpreterLock();
  ~InterpreterLock();
  InterpreterLock(const InterpreterLock&) = delete;
  InterpreterLock& operator=(const InterpreterLock&) = delete;
  bool ok() const { return ok_; }
  static const std::string& error();

 private:
  std::unique_lock<std::mutex> lock_;
  PyGILState_STATE gil_{};
  bool ok_ = false;
};

// While alive (under an InterpreterLock), the calling thread's Python code runs within `budget`.
class BudgetScope {
 public:
  explicit BudgetScope(const Budget& budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;
  bool time_exceeded() const;
  // Where the step budget ran out (the file and line of the first step over it).
  const std::string& time_exceeded_file() const;
  int time_exceeded_line() const;
  bool memory_exceeded() const;
};

// attribution.BudgetExceeded (a new reference is not returned: borrowed, lives forever).
PyObject* budget_exceeded_type();

}  // namespace attribution::python
