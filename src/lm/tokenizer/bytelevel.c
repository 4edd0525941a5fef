/* lm/tokenizer/bytelevel.c: UTF-8 classification and GPT-2's byte-to-unicode mapping (see bytelevel.h).
 *
 * The mapping is computed, not tabled: the printable bytes map to themselves, and the other
 * 68 (0x00..0x20, 0x7F..0xA0, 0xAD) are numbered from U+0100 in byte order, exactly as
 * GPT-2's bytes_to_unicode() builds it. */
#include "lm/tokenizer/bytelevel.h"

static bool is_cont(unsigned char c) { return (c & 0xC0) == 0x80; }

int fe_utf8_char(const unsigned char *s, size_t n, uint32_t *cp) {
    unsigned char c = s[0];
    if (c < 0x80) {
        if (cp) *cp = c;
        return 1;
    }
    int len;
    uint32_t v;
    unsigned char lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        v = c & 0x0F;
        if (c == 0xE0) lo = 0xA0; /* no overlongs */
        if (c == 0xED) hi = 0x9F; /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        v = c & 0x07;
        if (c == 0xF0) lo = 0x90; /* no overlongs */
        if (c == 0xF4) hi = 0x8F; /* nothing past U+10FFFF */
    } else {
        return -1; /* a continuation byte, C0/C1 or F5..FF: starts nothing */
    }
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return 0; /* valid so far, cut short */
        unsigned char d = s[i];
        bool ok = i == 1 ? (d >= lo && d <= hi) : is_cont(d);
        if (!ok) return -i;
        v = (v << 6) | (d & 0x3F);
    }
    if (cp) *cp = v;
    return len;
}

bool fe_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        int k = fe_utf8_char(p + i, n - i, NULL);
        if (k <= 0) return false;
        i += (size_t)k;
    }
    return true;
}

int fe_utf8_encode(uint32_t cp, unsigned char out[4]) {
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

uint32_t fe_bytelevel_char(unsigned char b) {
    if (b <= 0x20) return 0x100u + b;                   /* 33 control bytes and space */
    if (b >= 0x7F && b <= 0xA0) return 0x121u + (b - 0x7Fu); /* 34: DEL, C1, NBSP */
    if (b == 0xAD) return 0x143u;                       /* soft hyphen, the last */
    return b;
}

int fe_bytelevel_byte(uint32_t cp) {
    if (cp < 0x100) {
        if (cp <= 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) return -1;
        return (int)cp;
    }
    if (cp <= 0x120) return (int)(cp - 0x100);
    if (cp <= 0x142) return (int)(cp - 0x121 + 0x7F);
    if (cp == 0x143) return 0xAD;
    return -1;
}

bool fe_bytelevel_decode(const char *s, size_t n, char *out, size_t *out_len) {
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;
    while (i < n) {
        uint32_t cp;
        int k = fe_utf8_char(p + i, n - i, &cp);
        if (k <= 0) return false;
        int b = fe_bytelevel_byte(cp);
        if (b >= 0) {
            out[o++] = (char)b;
        } else {
            for (int j = 0; j < k; j++) out[o++] = s[i + (size_t)j];
        }
        i += (size_t)k;
    }
    *out_len = o;
    return true;
}

size_t fe_bytelevel_encode(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char buf[4];
        int k = fe_utf8_encode(fe_bytelevel_char((unsigned char)s[i]), buf);
        for (int j = 0; j < k; j++) out[o++] = (char)buf[j];
    }
    return o;
}
