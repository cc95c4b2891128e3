// Re-launching ferry under mpirun, as horovodrun does for Horovod.
#pragma once

namespace ferry::apps {

// Runs `mpirun -np ranks <this executable> argv...` (adding --allow-run-as-root as root and
// --oversubscribe when ranks exceed the cores) and returns its exit code.
int relaunch_under_mpirun(int ranks, int argc, char** argv);

}  // namespace ferry::apps
