/*
 * ngx_http_ringbloom_conf.c - what the directives' handlers share at
 * configuration time: NUL-terminated copies, the names a configuration
 * uses (Bloom filters, TinyLFU pairs: one index per name), a directive's
 * KEY / FALLBACK compiled into an ngx_http_ringbloom_key_t, and a $var
 * directive's variable added with its get handler.
 *
 * Called by ngx_http_ringbloom_module.c's handlers, at configuration time
 * only; calls no other file of the module.  Its errors are logged with the
 * directive's file and line (ngx_conf_log_error).
 */

#include "ngx_http_ringbloom.h"


/* Sets s to a NUL-terminated copy of data, len in the configuration pool. */
ngx_int_t
ngx_http_ringbloom_strz(ngx_conf_t *cf, ngx_str_t *s, u_char *data, size_t len)
{
    s->data = ngx_pnalloc(cf->pool, len + 1);
    if (s->data == NULL) {
        return NGX_ERROR;
    }

    ngx_memcpy(s->data, data, len);
    s->data[len] = '\0';
    s->len = len;

    return NGX_OK;
}


/*
 * The index of name in names, added if new (a NUL-terminated copy in the
 * element's leading ngx_str_t, the rest of a new element zeroed), or
 * NGX_ERROR for a name that is empty or longer than max (logged as
 * "invalid ringbloom WHAT name").
 */
ngx_int_t
ngx_http_ringbloom_name_index(ngx_conf_t *cf, ngx_array_t *names,
    ngx_str_t *name, size_t max, const char *what)
{
    u_char      *elt;
    ngx_str_t   *s;
    ngx_uint_t   i;

    if (name->len == 0 || name->len > max) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid ringbloom %s name \"%V\" (1 to %uz "
                           "bytes)", what, name, max);
        return NGX_ERROR;
    }

    elt = names->elts;

    for (i = 0; i < names->nelts; i++) {
        s = (ngx_str_t *) (elt + i * names->size);

        if (s->len == name->len
            && ngx_memcmp(s->data, name->data, name->len) == 0)
        {
            return (ngx_int_t) i;
        }
    }

    s = ngx_array_push(names);
    if (s == NULL) {
        return NGX_ERROR;
    }

    ngx_memzero(s, names->size);

    if (ngx_http_ringbloom_strz(cf, s, name->data, name->len) != NGX_OK) {
        return NGX_ERROR;
    }

    return (ngx_int_t) (names->nelts - 1);
}


static ngx_int_t
ngx_http_ringbloom_compile(ngx_conf_t *cf, ngx_str_t *value,
    ngx_http_complex_value_t *cv)
{
    ngx_http_compile_complex_value_t  ccv;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = value;
    ccv.complex_value = cv;

    return ngx_http_compile_complex_value(&ccv);
}


/*
 * What a directive names, compiled: KEY, with FALLBACK unless NULL; its
 * filter is index (a name's index, or 0).  NULL on error (logged).
 */
ngx_http_ringbloom_key_t *
ngx_http_ringbloom_key(ngx_conf_t *cf, ngx_http_ringbloom_main_conf_t *rmcf,
    ngx_uint_t index, ngx_str_t *key, ngx_str_t *fallback)
{
    ngx_http_ringbloom_key_t  *rk;

    rk = ngx_pcalloc(cf->pool, sizeof(ngx_http_ringbloom_key_t));
    if (rk == NULL) {
        return NULL;
    }

    rk->conf = rmcf;
    rk->filter = index;

    if (ngx_http_ringbloom_compile(cf, key, &rk->key) != NGX_OK) {
        return NULL;
    }

    if (fallback != NULL) {
        rk->fallback = ngx_palloc(cf->pool, sizeof(ngx_http_complex_value_t));
        if (rk->fallback == NULL) {
            return NULL;
        }

        if (ngx_http_ringbloom_compile(cf, fallback, rk->fallback) != NGX_OK) {
            return NULL;
        }
    }

    rmcf->used = 1;

    return rk;
}


/*
 * A $var directive: its first argument ("$name") becomes a variable
 * answered by handler with data rk (KEY is value[key], FALLBACK the
 * argument after it if fallback).  NGX_CONF_OK, or NGX_CONF_ERROR
 * (logged).
 */
char *
ngx_http_ringbloom_variable(ngx_conf_t *cf,
    ngx_http_ringbloom_main_conf_t *rmcf, ngx_uint_t index, ngx_uint_t key,
    ngx_uint_t fallback, ngx_http_get_variable_pt handler)
{
    ngx_str_t                 *value, name;
    ngx_http_variable_t       *var;
    ngx_http_ringbloom_key_t  *rk;

    value = cf->args->elts;
    name = value[1];

    if (name.len < 2 || name.data[0] != '$') {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "invalid variable name \"%V\"", &name);
        return NGX_CONF_ERROR;
    }

    name.len--;
    name.data++;

    rk = ngx_http_ringbloom_key(cf, rmcf, index, &value[key],
                                fallback ? &value[key + 1] : NULL);
    if (rk == NULL) {
        return NGX_CONF_ERROR;
    }

    var = ngx_http_add_variable(cf, &name, 0);
    if (var == NULL) {
        return NGX_CONF_ERROR;
    }

    var->get_handler = handler;
    var->data = (uintptr_t) rk;

    return NGX_CONF_OK;
}
