// CurlApi: libcurl, loaded on first use (dlopen of libcurl.so.4) rather than
// linked, because it brings 26 shared libraries (nghttp2, ssh2, rtmp, ldap,
// kerberos, idn2, psl, brotli, ...) that every flashpipe process would map
// and relocate at start (about 3 ms of CPU and 290 page faults on a 2-core
// VM, more under emulation) although only a command given an http(s) URL
// uses them. The table holds the few functions http_client.cc calls; the
// headers are still libcurl's, so types and constants are checked as usual.
//
// LoadCurl() loads the library and runs curl_global_init once for the
// process (thread-safe); a machine without libcurl4 gets an error that says
// so, and only the commands that fetch fail. Curl() is the table, for code
// that has called LoadCurl() successfully.
#pragma once

#include <curl/curl.h>

#include "base/status.h"

namespace flashpipe::fetch {

struct CurlApi {
  decltype(&curl_global_init) global_init;
  decltype(&curl_easy_init) easy_init;
  decltype(&curl_easy_cleanup) easy_cleanup;
  decltype(&curl_easy_setopt) easy_setopt;
  decltype(&curl_easy_perform) easy_perform;
  decltype(&curl_easy_getinfo) easy_getinfo;
  decltype(&curl_easy_strerror) easy_strerror;
  decltype(&curl_slist_append) slist_append;
  decltype(&curl_slist_free_all) slist_free_all;
  decltype(&curl_multi_init) multi_init;
  decltype(&curl_multi_cleanup) multi_cleanup;
  decltype(&curl_multi_setopt) multi_setopt;
  decltype(&curl_multi_add_handle) multi_add_handle;
  decltype(&curl_multi_remove_handle) multi_remove_handle;
  decltype(&curl_multi_perform) multi_perform;
  decltype(&curl_multi_poll) multi_poll;
  decltype(&curl_multi_info_read) multi_info_read;
};

Status LoadCurl();
const CurlApi& Curl();

}  // namespace flashpipe::fetch
