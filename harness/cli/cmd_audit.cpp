// qgpu/harness/cli/cmd_audit.cpp — `qgpu audit RUN`: the replay audit of a recorded run
// (`check --out DIR`; harness/audit.h, docs/reports.md).
//
// Exit codes (command.h): 0 every trace was re-derived 1:1 and every digest held; 1 something
// differs (each case that does is printed with its first difference and decoded position); 4
// nothing to audit (no case has a trace); 2 a manifest, report or trace record that is corrupt,
// foreign, partial or of another trace version (ReportInvalid, TraceInvalid), or a file that
// cannot be read (Io).
#include <iostream>

#include "harness/audit.h"
#include "harness/cli/command.h"
#include "harness/cli/util.h"

namespace qgpu::cli {

namespace {

struct AuditCmdOptions {
  std::string run;         // a recorded run's directory, or its manifest
  bool noCatalog = false;  // --no-catalog: do not compare the inputs with the catalog's
};

int runAuditCommand(const AuditCmdOptions& o, const CommonOptions& common) {
  audit::AuditOptions options;
  if (!o.noCatalog) options.catalogDir = catalogDir(common);
  auto audited = audit::auditRun(o.run, options);
  if (!audited.ok()) return reportError(audited.error());
  int code = exitCode(audited->total());
  if (common.json) {
    std::cout << dumpJson(audit::toJson(*audited)) << "\n";
  } else {
    std::cout << audit::formatAudit(*audited);
    if (code != kExitOk) std::cout << "reproduce with: " << commandLine() << "\n";
  }
  return code;
}

}  // namespace

Command addAuditCommand(CLI::App& root, const CommonOptions& common) {
  static AuditCmdOptions o;
  CLI::App* app = root.add_subcommand(
      "audit", "Re-derive every trace of a recorded run (check --out DIR) and confirm it 1:1");
  app->add_option("run", o.run, "The recorded run: its directory, or its manifest.json")
      ->required();
  app->add_flag("--no-catalog", o.noCatalog,
                "Do not compare the recorded inputs with the catalog kernels' own");
  return {app, [&common] { return runAuditCommand(o, common); }};
}

}  // namespace qgpu::cli
