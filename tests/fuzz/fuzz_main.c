/* Regression driver (zstd's pattern): runs a fuzz target over every file of a corpus directory. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* --random N SEED: N pseudo-random inputs of up to 4 KiB (the property tests). */
static int run_random(long count, unsigned long long seed)
{
	uint8_t *buf = malloc(4096);

	if (!buf)
		return 1;
	for (long k = 0; k < count; k++) {
		size_t len;
		for (size_t i = 0; i < 4096; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			buf[i] = (uint8_t)(seed >> 56);
		}
		len = 16 + (size_t)(seed >> 33) % 4080;
		LLVMFuzzerTestOneInput(buf, len);
	}
	free(buf);
	printf("%ld random inputs ran without a crash\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	int n = 0;

	if (argc == 4 && strcmp(argv[1], "--random") == 0)
		return run_random(atol(argv[2]), strtoull(argv[3], NULL, 10));
	for (int a = 1; a < argc; a++) {
		DIR *d = opendir(argv[a]);
		struct dirent *e;
		if (!d) {
			fprintf(stderr, "cannot open corpus '%s'\n", argv[a]);
			return 1;
		}
		while ((e = readdir(d))) {
			char path[4096];
			FILE *f;
			long len;
			uint8_t *buf;
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[a], e->d_name);
			f = fopen(path, "rb");
			if (!f)
				continue;
			fseek(f, 0, SEEK_END);
			len = ftell(f);
			fseek(f, 0, SEEK_SET);
			buf = malloc((size_t)len + 1);
			if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
				fclose(f);
				free(buf);
				return 1;
			}
			fclose(f);
			LLVMFuzzerTestOneInput(buf, (size_t)len);
			free(buf);
			n++;
		}
		closedir(d);
	}
	printf("%d inputs ran without a crash\n", n);
	return n > 0 ? 0 : 1;
}
