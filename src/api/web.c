/* The playground (web/): plain HTML, JS and CSS, built into the binary so
 * that `codecell serve` is one file to install.
 *
 * The files are pulled in by the assembler's .incbin, relative to the
 * directory make runs in (the top of the tree), so web/ stays the source
 * with no generated copy beside it.  The Makefile rebuilds this object when
 * any file in web/ changes. */
#include <string.h>

#include "api/handlers.h"
#include "http/http.h"
#include "util/macro.h"
#include "util/banned.h"

#define EMBED(sym, file)                                               \
	__asm__(".section .rodata\n"                                   \
		".balign 16\n"                                         \
		".hidden " #sym "\n"                                   \
		".hidden " #sym "_end\n" #sym ":\n"                    \
		".incbin \"" file "\"\n" #sym "_end:\n"                \
		".byte 0\n"                                            \
		".previous\n");                                        \
	extern const char sym[] __attribute__((visibility("hidden"))); \
	extern const char sym##_end[] __attribute__((visibility("hidden")))

EMBED(web_index_html, "web/index.html");
EMBED(web_app_js, "web/app.js");
EMBED(web_style_css, "web/style.css");
EMBED(web_favicon_svg, "web/favicon.svg");

static const struct {
	const char *name;
	const char *type;
	const char *data, *end;
} assets[] = {
	{ "index.html", "text/html; charset=utf-8", web_index_html, web_index_html_end },
	{ "app.js", "text/javascript; charset=utf-8", web_app_js, web_app_js_end },
	{ "style.css", "text/css; charset=utf-8", web_style_css, web_style_css_end },
	{ "favicon.svg", "image/svg+xml", web_favicon_svg, web_favicon_svg_end },
	/* what browsers ask for when a page names no icon (or before they
	 * read the page): the same picture, so the log shows no 404 */
	{ "favicon.ico", "image/svg+xml", web_favicon_svg, web_favicon_svg_end },
};

/* The page runs no script but its own and shows images only inline: what
 * sandboxed code prints as HTML is sanitized by app.js as well. */
#define CSP                                                                               \
	"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

enum MHD_Result api_handle_asset(struct api_call *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(assets); i++) {
		struct MHD_Response *r;
		enum MHD_Result ret;

		if (strcmp(c->route.path, assets[i].name) != 0)
			continue;
		r = MHD_create_response_from_buffer((size_t)(assets[i].end - assets[i].data),
						    (void *)assets[i].data, MHD_RESPMEM_PERSISTENT);
		if (!r)
			return MHD_NO;
		MHD_add_response_header(r, "Content-Type", assets[i].type);
		MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
		MHD_add_response_header(r, "Content-Security-Policy", CSP);
		MHD_add_response_header(r, "X-Frame-Options", "DENY");
		MHD_add_response_header(r, "Cache-Control", "no-cache");
		ret = MHD_queue_response(c->conn, 200, r);
		MHD_destroy_response(r);
		return ret;
	}
	return api_respond_errorf(c, 404, "not_found", "no such page");
}
