// Script trace: with GPUCTL_TRACE_SCRIPTS=DIR, every script gpuctl sends to a
// node is also written to DIR, so a test (or an auditor of an air-gapped
// site) can read exactly what ran: what the node got on stdin, less sudo's
// password, with every secret the run knows replaced by "<redacted>".
#pragma once

#include <memory>

#include "gpuctl/run/redact.h"
#include "gpuctl/transport/transport.h"

namespace gpuctl {

// `inner` itself when GPUCTL_TRACE_SCRIPTS is unset or empty; otherwise a
// transport whose connections also write each command to
// DIR/<sequence>-<node>.sh (mode 0600; DIR is created 0700). Call
// TraceRedactor before the first Connect: a trace never writes unredacted.
std::unique_ptr<Transport> TraceScriptsFromEnv(std::unique_ptr<Transport> inner);

// Gives a tracing transport the run's redactor (the RunContext's, which
// holds every secret as it becomes known); a no-op for any other transport.
void TraceRedactor(Transport& transport, const Redactor& redactor);

}  // namespace gpuctl
