# Install and package (docs/design.md, "Install and packaging").
#
# Two components, so the AOSP-named links can be left out where the AOSP tools
# are installed (Debian's android-sdk-libsparse-utils owns /usr/bin/img2simg):
#   flashpipe     the binary, man pages, bash and zsh completion, the systemd
#                 unit for `serve` and its environment file
#   sparse_utils  img2simg, simg2img, append2simg: relative links to flashpipe,
#                 their man pages and completion
# `cmake --install build` installs both; `--component flashpipe` only the
# first. `cpack -G DEB` makes one package of each: flashpipe and
# flashpipe-sparse-utils (which conflicts with android-sdk-libsparse-utils).
#
# Man pages and completion are generated from the built binary
# (scripts/gen_docs.py reads `flashpipe --help-json`), so they follow --help.
include(GNUInstallDirs)
find_package(Python3 REQUIRED COMPONENTS Interpreter)

set(FLASHPIPE_LINKS img2simg simg2img append2simg)
set(GEN_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_command(OUTPUT ${GEN_DIR}/stamp
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen_docs.py $<TARGET_FILE:flashpipe> ${GEN_DIR}
          ${FLASHPIPE_LINKS}
  COMMAND ${CMAKE_COMMAND} -E touch ${GEN_DIR}/stamp
  DEPENDS flashpipe ${PROJECT_SOURCE_DIR}/scripts/gen_docs.py
  COMMENT "Generating man pages and shell completion from flashpipe --help-json")
add_custom_target(flashpipe_docs ALL DEPENDS ${GEN_DIR}/stamp)

# The links, made here so that install copies them as relative links.
file(MAKE_DIRECTORY ${GEN_DIR}/bin)
foreach(l ${FLASHPIPE_LINKS})
  file(CREATE_LINK flashpipe ${GEN_DIR}/bin/${l} SYMBOLIC)
endforeach()

install(TARGETS flashpipe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT flashpipe)
install(DIRECTORY ${GEN_DIR}/man/man1 DESTINATION ${CMAKE_INSTALL_MANDIR} COMPONENT flashpipe)
install(FILES ${GEN_DIR}/bash/flashpipe DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        COMPONENT flashpipe)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT flashpipe)
# The JSON Schema of every --json report and of --progress json events.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/schema DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT flashpipe)
# Lab integrations (contrib/labgrid, contrib/lava): the labgrid driver module
# an environment's imports: names, the LAVA device-type template.
install(FILES ${PROJECT_SOURCE_DIR}/contrib/labgrid/flashpipe_labgrid.py
        DESTINATION ${CMAKE_INSTALL_DATADIR}/flashpipe/labgrid COMPONENT flashpipe)
install(FILES ${PROJECT_SOURCE_DIR}/contrib/lava/flashpipe.jinja2
        DESTINATION ${CMAKE_INSTALL_DATADIR}/flashpipe/lava COMPONENT flashpipe)

# Paths that depend on the prefix chosen at install time (cmake --install
# --prefix, cpack's /usr), so they are worked out then: with prefix /usr the
# environment file goes to /etc/default and zsh completion to Debian's
# vendor-completions; with any other prefix P to P/etc/default and
# P/share/zsh/site-functions. The unit names the installed binary and
# environment file, and goes to P/lib/systemd/system (systemd reads
# /usr/local/lib/systemd/system too).
install(CODE "
  set(src \"${PROJECT_SOURCE_DIR}\")
  set(gen \"${GEN_DIR}\")
  set(bindir \"${CMAKE_INSTALL_BINDIR}\")
  set(datadir \"${CMAKE_INSTALL_DATADIR}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install_system_files.cmake\")
" COMPONENT flashpipe)

install(PROGRAMS ${GEN_DIR}/bin/img2simg ${GEN_DIR}/bin/simg2img ${GEN_DIR}/bin/append2simg
        DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT sparse_utils)
install(DIRECTORY ${GEN_DIR}/links/man1 DESTINATION ${CMAKE_INSTALL_MANDIR} COMPONENT sparse_utils)
install(DIRECTORY ${GEN_DIR}/links/bash/ DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        COMPONENT sparse_utils)

# Debian packages.
set(CPACK_PACKAGE_NAME flashpipe)
set(CPACK_PACKAGE_VENDOR flashpipe)
set(CPACK_PACKAGE_CONTACT "flashpipe maintainers <flashpipe@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL flashpipe sparse_utils)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)  # debug symbols stay in the build tree
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_FLASHPIPE_PACKAGE_NAME flashpipe)
# libcurl is dlopen'ed on first use (src/fetch/curl_api.h), so dpkg-shlibdeps
# cannot see it: said here, beside what it computes.
set(CPACK_DEBIAN_FLASHPIPE_PACKAGE_DEPENDS "libcurl4 | libcurl3-gnutls")
# The first line of a description is the package's summary.
set(CPACK_DEBIAN_FLASHPIPE_DESCRIPTION
  "disk images onto storage at the speed of the storage
flashpipe writes Android sparse, raw, compressed and bmap images to files
and block devices with io_uring and O_DIRECT (flashpipe write), serves the
fastboot protocol over TCP and UDP on a board (flashpipe serve, with a
systemd unit), measures storage (flashpipe bench), and converts sparse
images (img2simg, simg2img, append2simg, resparse, dump as commands).")
set(CPACK_DEBIAN_FLASHPIPE_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/contrib/debian/conffiles ${PROJECT_SOURCE_DIR}/contrib/debian/postinst
    ${PROJECT_SOURCE_DIR}/contrib/debian/prerm ${PROJECT_SOURCE_DIR}/contrib/debian/postrm)
set(CPACK_DEBIAN_FLASHPIPE_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_SPARSE_UTILS_PACKAGE_NAME flashpipe-sparse-utils)
set(CPACK_DEBIAN_SPARSE_UTILS_PACKAGE_DEPENDS "flashpipe (= ${PROJECT_VERSION})")
set(CPACK_DEBIAN_SPARSE_UTILS_PACKAGE_CONFLICTS android-sdk-libsparse-utils)
set(CPACK_DEBIAN_SPARSE_UTILS_PACKAGE_REPLACES android-sdk-libsparse-utils)
set(CPACK_DEBIAN_SPARSE_UTILS_DESCRIPTION
  "img2simg, simg2img and append2simg as links to flashpipe
Drop-in versions of the AOSP sparse image tools: links named img2simg,
simg2img and append2simg to the flashpipe binary, with their man pages.
They replace the tools of android-sdk-libsparse-utils.")
set(CPACK_DEBIAN_SPARSE_UTILS_PACKAGE_SECTION utils)
include(CPack)
