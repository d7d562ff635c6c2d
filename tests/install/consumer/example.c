/* A program outside memsnap that records a few events through the installed library. */
#include <memsnap/recorder.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	struct msr_options o;
	struct msr *r;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: example TRACE\n");
		return 2;
	}
	msr_options_init(&o);
	rc = msr_open(argv[1], &o, &r);
	if (rc) {
		fprintf(stderr, "example: %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	for (uint64_t i = 0; i < 1000; i++) {
		struct msr_event e = {0};
		e.action = i % 2 ? MSR_FREE_COMPLETED : MSR_ALLOC;
		e.addr = 0x7f0000000000ULL + (i / 2) * 4096;
		e.size = 4096;
		msr_record(r, &e);
	}
	rc = msr_close(r);
	printf("recorder %s: %s\n", msr_version_string(), rc ? strerror(-rc) : "ok");
	return rc != 0;
}
