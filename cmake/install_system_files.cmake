# Run at install time (install(CODE) in cmake/install.cmake), when the prefix
# is known: the systemd unit for `serve`, its environment file, zsh completion.
# In: src, gen (the generated files), bindir, datadir (relative).
# file(INSTALL) adds $DESTDIR and records the files in the install manifest.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc "/etc")
  set(zsh_dir "${CMAKE_INSTALL_PREFIX}/${datadir}/zsh/vendor-completions")
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
  set(zsh_dir "${CMAKE_INSTALL_PREFIX}/${datadir}/zsh/site-functions")
endif()
set(FLASHPIPE_BINARY "${CMAKE_INSTALL_PREFIX}/${bindir}/flashpipe")
set(FLASHPIPE_SERVE_DEFAULTS "${etc}/default/flashpipe-serve")

# One configured unit per prefix, so installs to two prefixes at once do not
# share a file.
string(MD5 prefix_id "${CMAKE_INSTALL_PREFIX}")
set(unit_dir "${gen}/unit-${prefix_id}")
configure_file("${src}/contrib/flashpipe-serve.service.in" "${unit_dir}/flashpipe-serve.service" @ONLY)

file(INSTALL "${unit_dir}/flashpipe-serve.service" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
file(INSTALL "${src}/contrib/flashpipe-serve.default" DESTINATION "${etc}/default"
     RENAME flashpipe-serve)
file(INSTALL "${gen}/zsh/_flashpipe" DESTINATION "${zsh_dir}")
