/* HTTPS on the TCP listener: the certificate and key files are read once at start, checked
 * as a pair with GnuTLS (the TLS stack libmicrohttpd serves with, and the daemon's only one:
 * hostd/http/README.md, "TLS") and handed to MHD in memory. Every error names the file. */
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdlib.h>
#include <string.h>

#include "fdutil.h"
#include "http_internal.h"

static int
tls_read(const char *what, const char *path, char **ret, size_t *ret_len, Error **errp)
{
    if (read_file_bounded(path, HTTP_TLS_FILE_MAX_BYTES, ret, ret_len) < 0)
        return error_set(errp, E_INVALID, errno, "%s %.300s", what, path);
    return 0;
}

/* Each file on its own first, so the error says which one is wrong. */
static int
tls_check_each(const HttpTls *t, const char *cert_file, const char *key_file, Error **errp)
{
    gnutls_datum_t cd = {.data = (unsigned char *) t->cert_pem, .size = (unsigned) t->cert_len};
    gnutls_datum_t kd = {.data = (unsigned char *) t->key_pem, .size = (unsigned) t->key_len};
    gnutls_x509_crt_t *certs = NULL;
    gnutls_x509_privkey_t key = NULL;
    unsigned n = 0;

    int r = gnutls_x509_crt_list_import2(&certs, &n, &cd, GNUTLS_X509_FMT_PEM, 0);
    for (unsigned i = 0; r >= 0 && i < n; i++)
        gnutls_x509_crt_deinit(certs[i]);
    gnutls_free(certs);
    if (r < 0 || n == 0)
        return error_set(errp, E_INVALID, 0, "tls_cert %.300s: not a PEM certificate (%s)",
                         cert_file, r < 0 ? gnutls_strerror(r) : "none found");
    if ((r = gnutls_x509_privkey_init(&key)) == 0)
        r = gnutls_x509_privkey_import2(key, &kd, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN);
    gnutls_x509_privkey_deinit(key);
    if (r < 0)
        return error_set(errp, E_INVALID, 0,
                         "tls_key %.300s: not an unencrypted PEM private key (%s)", key_file,
                         gnutls_strerror(r));
    return 0;
}

/* The pair as MHD will load it: GnuTLS refuses a key that is not the certificate's. */
static int
tls_check_pair(const HttpTls *t, const char *cert_file, const char *key_file, Error **errp)
{
    gnutls_certificate_credentials_t cred;
    gnutls_datum_t cd = {.data = (unsigned char *) t->cert_pem, .size = (unsigned) t->cert_len};
    gnutls_datum_t kd = {.data = (unsigned char *) t->key_pem, .size = (unsigned) t->key_len};

    int r = gnutls_certificate_allocate_credentials(&cred);
    if (r < 0)
        return error_set(errp, E_INTERNAL, 0, "TLS credentials: %s", gnutls_strerror(r));
    r = gnutls_certificate_set_x509_key_mem2(cred, &cd, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
    gnutls_certificate_free_credentials(cred);
    if (r == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
        return error_set(errp, E_INVALID, 0,
                         "tls_key %.300s is not the key of tls_cert %.300s (the pair does not "
                         "match)",
                         key_file, cert_file);
    if (r < 0)
        return error_set(errp, E_INVALID, 0, "tls_cert %.300s with tls_key %.300s: %s", cert_file,
                         key_file, gnutls_strerror(r));
    return 0;
}

int
http_tls_load(const char *cert_file, const char *key_file, HttpTls *ret, Error **errp)
{
    HttpTls t = {0};

    if (!cert_file || !key_file)
        return error_set(errp, E_INVALID, 0, "http: TLS needs both a certificate and a key");
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return error_set(errp, E_INVALID, 0, "http: this libmicrohttpd was built without TLS");
    if (tls_read("tls_cert", cert_file, &t.cert_pem, &t.cert_len, errp) < 0 ||
        tls_read("tls_key", key_file, &t.key_pem, &t.key_len, errp) < 0 ||
        tls_check_each(&t, cert_file, key_file, errp) < 0 ||
        tls_check_pair(&t, cert_file, key_file, errp) < 0) {
        http_tls_clear(&t);
        return -1;
    }
    *ret = t;
    return 0;
}

void
http_tls_clear(HttpTls *t)
{
    if (t->key_pem)
        explicit_bzero(t->key_pem, t->key_len);
    free(t->key_pem);
    free(t->cert_pem);
    *t = (HttpTls){0};
}
