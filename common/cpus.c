/* How many CPUs this process may run on (cpus.h). */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "common/cpus.h"

#include <sched.h>
#include <unistd.h>

unsigned ms_cpus_usable(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}
