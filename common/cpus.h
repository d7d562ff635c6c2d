/* How many CPUs this process may run on: the threads a parallel pass starts by default. */
#ifndef MEMSNAP_COMMON_CPUS_H
#define MEMSNAP_COMMON_CPUS_H

/* The CPUs of this process's affinity mask (taskset, a container's cpuset), else those online;
 * at least 1. */
unsigned ms_cpus_usable(void);

#endif
