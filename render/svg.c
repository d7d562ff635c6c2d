/* SVG: the DOT of dot.c laid out in-process by libgvc (no `dot` process needed). */
#include "render/render.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/status.h"
#include "ms_config.h"

#if MS_HAVE_GRAPHVIZ
#include <graphviz/gvc.h>

int ms_render_have_svg(void)
{
	return 1;
}

ms_status ms_render_svg(const struct ms_render_input *in, struct ms_buf *out, struct ms_diag *d)
{
	struct ms_buf dot = MS_BUF_INIT;
	GVC_t *gvc = NULL;
	Agraph_t *g = NULL;
	char *svg = NULL;
	size_t len = 0;
	FILE *f;
	int rc;
	ms_status s;

	if ((s = ms_render_dot(in, &dot)) || (s = ms_buf_append(&dot, "", 1)))
		goto out;
	if (!(gvc = gvContext())) {
		s = ms__diag_set(d, MS_ERR_NOMEM, -1, -1, "graphviz: cannot start a context");
		goto out;
	}
	if (!(g = agmemread(dot.data))) {
		s = ms__diag_set(d, MS_ERR_BACKEND, -1, -1,
		                 "graphviz rejected the DOT it was given");
		goto out;
	}
	if (gvLayout(gvc, g, "dot") != 0) {
		s = ms__diag_set(d, MS_ERR_BACKEND, -1, -1, "graphviz: the dot layout failed");
		goto out;
	}
	/*
	 * gvRender into a memory stream: gvRenderData's length argument changed type between
	 * Graphviz releases, gvRender's did not
	 */
	if (!(f = open_memstream(&svg, &len))) {
		gvFreeLayout(gvc, g);
		s = MS_ERR_NOMEM;
		goto out;
	}
	rc = gvRender(gvc, g, "svg", f);
	if (fclose(f) != 0 || rc != 0)
		s = ms__diag_set(d, MS_ERR_BACKEND, -1, -1, "graphviz: rendering SVG failed");
	else
		s = ms_buf_append(out, svg, len);
	free(svg); /* open_memstream's buffer belongs to libc's malloc */
	gvFreeLayout(gvc, g);
out:
	if (g)
		agclose(g);
	if (gvc)
		gvFreeContext(gvc);
	ms_buf_release(&dot);
	return s;
}

#else

int ms_render_have_svg(void)
{
	return 0;
}

ms_status ms_render_svg(const struct ms_render_input *in, struct ms_buf *out, struct ms_diag *d)
{
	(void)in;
	(void)out;
	return ms__diag_set(d, MS_ERR_UNSUPPORTED, -1, -1,
	                    "this memsnap was built without Graphviz (libgvc): use --format dot "
	                    "and run `dot -Tsvg`");
}
#endif
