// OpenMP's wait policy for runs that stream experts from disk. libgomp's threads spin after each
// parallel region (its default here); on a machine with as many threads as cores they take the
// cycles the expert reads and the next kernels need. libgomp reads OMP_WAIT_POLICY once, when the
// process starts, so the policy is set by re-executing the process (docs/moe.md, "Wait policy").
#pragma once

namespace ferry::apps {

// When `streams_from_disk` and the user has not set OMP_WAIT_POLICY: re-executes this process
// (/proc/self/exe with its own arguments) with OMP_WAIT_POLICY=PASSIVE; it does not return then.
// Otherwise, or if the re-execution cannot be made, returns and the run goes on as it is.
void prefer_passive_wait(bool streams_from_disk);

// The footer of --help for the commands that call prefer_passive_wait().
inline constexpr const char* kWaitPolicyHelp =
    "When the experts stream from disk and OMP_WAIT_POLICY is not set, this command restarts itself\n"
    "with OMP_WAIT_POLICY=PASSIVE (OpenMP threads sleep instead of spinning between kernels, leaving\n"
    "the cores to the expert reads). A policy set in the environment is kept. docs/moe.md, \"Wait policy\".";

}  // namespace ferry::apps
