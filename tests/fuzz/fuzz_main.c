/* Regression driver (zstd's pattern): runs a fuzz target over every file of a corpus directory. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	int n = 0;

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
