// qgpu/harness/report/merge.h — shard reports into the one report of the whole plan.
//
// Contract: `mergeReports` refuses, with ErrorKind::ReportInvalid naming the file(s), a set of
// reports that is not exactly one run cut into shards: a partial report (a killed shard),
// different commits (or a dirty tree, a dirty flag that differs), different catalogs (catalog
// digest), different plans (kernels, compilers, legs, step limit), different shard counts, the
// same shard twice, a missing shard, a kernel in two shards (overlap) or in none (missing).
// The merged report is the unsharded run's: shard 0 of 1, every job, the cases in plan order,
// the tallies recounted; provenance from the first report, with every distinct host and GPU
// device listed (", " / "; "); started at the earliest start, finished at the latest finish,
// wallSeconds the longest shard's. Its cases equal those of one unsharded run of the same plan
// but for the times (the test: harness/tests/report_shard_test.cpp).
#pragma once

#include <string>
#include <vector>

#include "common/diag.h"
#include "harness/report/json_report.h"

namespace qgpu::report {

// `files[i]` names `reports[i]` in messages.
Expected<RunReport> mergeReports(const std::vector<RunReport>& reports,
                                 const std::vector<std::string>& files);

}  // namespace qgpu::report
