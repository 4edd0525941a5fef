/* lm/tokenizer/bytelevel.h: UTF-8 decoding and GPT-2's byte-to-unicode mapping, the text form in which
 * byte-level BPE vocabularies (tokenizer.json, GGUF "gpt2") store their tokens.
 *
 * GPT-2 writes each byte of a token as one printable code point: the bytes 0x21..0x7E,
 * 0xA1..0xAC and 0xAE..0xFF stand for themselves, the other 68 become U+0100..U+0143 in
 * byte order (so a space, 0x20, is written U+0120 'Ġ'). The mapping is a bijection between
 * the 256 bytes and those 256 code points; everything here is a pure function (no tables,
 * no initialisation, thread-safe). */
#ifndef FE_LM_BYTELEVEL_H
#define FE_LM_BYTELEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Classifies the bytes s[0..n) (n >= 1) as the start of one UTF-8 character:
 *   > 0  a valid character of that many bytes is there (its code point in *cp, may be NULL);
 *   0    s[0..n) is a proper prefix of a valid character: more bytes are needed;
 *   < 0  invalid: -k, where k >= 1 is the length of the maximal valid prefix to replace by
 *        one U+FFFD (the Unicode "maximal subpart" rule).
 * Overlong forms, surrogates and code points past U+10FFFF are invalid. */
int fe_utf8_char(const unsigned char *s, size_t n, uint32_t *cp);

/* Whether s[0..n) is entirely valid UTF-8. */
bool fe_utf8_valid(const char *s, size_t n);

/* Writes the UTF-8 form of cp (<= U+10FFFF, not a surrogate) into out; returns its length. */
int fe_utf8_encode(uint32_t cp, unsigned char out[4]);

/* The code point that stands for byte b in byte-level text. */
uint32_t fe_bytelevel_char(unsigned char b);

/* The byte that code point cp stands for, or -1 when cp stands for none. */
int fe_bytelevel_byte(uint32_t cp);

/* Converts byte-level text s[0..n) to the raw bytes it stands for, into out (which needs n
 * bytes: the raw form is never longer). A code point outside the mapping is kept as its own
 * UTF-8 bytes. Returns false, leaving *out_len undefined, when s is not valid UTF-8. */
bool fe_bytelevel_decode(const char *s, size_t n, char *out, size_t *out_len);

/* Converts raw bytes to byte-level text: out needs 2 * n bytes. Returns the length written. */
size_t fe_bytelevel_encode(const char *s, size_t n, char *out);

#endif
