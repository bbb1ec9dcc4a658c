// qgpu/harness/report/junit.h — the run report as JUnit XML, the format CI systems render as
// they render GoogleTest's `--gtest_output=xml` (docs/reports.md).
//
// One <testsuite> per leg and compiler, named "<leg>.<compiler>" ("interp.clang"), one
// <testcase> per kernel in it: classname "qgpu.<leg>.<compiler>", name the kernel, time its wall
// seconds. A match has no child; a mismatch a <failure type="mismatch" message="first
// difference">; an inconclusive case <skipped message="reason"/>; a harness error
// <error type="harness-error" message="...">. Failures and errors carry, as text, the error
// kind, the digests and the command that reproduces the case. The root <testsuites> has the
// totals and the run's provenance as <properties>; a partial report says so in a property.
#pragma once

#include <string>

#include "harness/report/json_report.h"

namespace qgpu::report {

std::string junitXml(const RunReport& report);

}  // namespace qgpu::report
