/* FreeType 2 (Debian 12: 2.12, Debian 13: 2.13): the overlay's glyphs. */
#include <ft2build.h>
#include FT_FREETYPE_H
