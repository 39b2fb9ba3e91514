# SPDX-License-Identifier: MIT
# packaging.cmake - Debian packages through CPack.
#
#   cmake --build build --target package     (or: cd build && cpack)
#
# gives three .deb files in the build directory, split the Debian way:
#   libhashring2     the shared libraries (what programs need at run time),
#                    named after the SONAME, libhashring.so.2, with
#                    libhashring-rebalance.so.2 beside it
#   libhashring-dev  headers, the .so links, the static libraries,
#                    hashring.pc, hashring-rebalance.pc and the CMake package
#   hashring         the command-line tool and its man page
# Dependencies are written out, not guessed by dpkg-shlibdeps, so the
# packages build on any machine; tests/package checks them against what
# the binaries actually load.

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hashring)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "consistent-hash ring of cluster nodes kept in sync with etcd")
set(CPACK_PACKAGE_CONTACT "hashring maintainers <hashring@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES OFF)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib dev cli)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

# Debian 12 package names of what the library and the tool link with.
set(HR_DEB_RUNTIME_DEPENDS
    "libc6 (>= 2.34), libcurl4 (>= 7.88), libcjson1 (>= 1.7.15), libxxhash0 (>= 0.8), liburcu8 (>= 0.13), libssl3 (>= 3.0), libhiredis0.14 (>= 0.14.1)")

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libhashring${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "${HR_DEB_RUNTIME_DEPENDS}")
set(CPACK_COMPONENT_LIB_DESCRIPTION
    "The shared libraries: a client-side consistent-hash ring whose
membership lives in etcd, with lookups that neither lock nor allocate,
warming and draining nodes, and lease-backed self-registration; and
libhashring-rebalance, which copies a cache's keys between nodes as the
ring changes.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libhashring-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS lib)
# The static library needs the dependencies' own -dev packages.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS
    "libcurl4-openssl-dev | libcurl-dev, libcjson-dev, libxxhash-dev, liburcu-dev, libssl-dev, libhiredis-dev, pkgconf | pkg-config")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "Development files: headers, the static libraries, hashring.pc and
hashring-rebalance.pc for pkg-config and the CMake package
(find_package(hashring) gives the imported targets hashring::hashring
and hashring::rebalance).")

# The tool links the library statically, so it depends on what the library
# depends on (libcrypto included: ketama's MD5 and the gateway's base64).
set(CPACK_DEBIAN_CLI_PACKAGE_NAME hashring)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION net)
# And on libmicrohttpd, which only the tool links (hashring serve).
set(CPACK_DEBIAN_CLI_PACKAGE_DEPENDS "${HR_DEB_RUNTIME_DEPENDS}, libmicrohttpd12 (>= 0.9.75)")
set(CPACK_COMPONENT_CLI_DESCRIPTION
    "The hashring command: look keys up, list and watch the ring, register
a node under a lease as a sidecar, change a node's state or weight, and
simulate balance and key movement, and serve a live page of the ring.")

# Debian's place for the license: /usr/share/doc/PACKAGE/copyright in each
# package.  EXCLUDE_FROM_ALL: installed for the packages (cpack installs
# one component at a time), not by a plain cmake --install.
foreach(component lib dev cli)
  string(TOUPPER ${component} upper)
  install(FILES ${CMAKE_SOURCE_DIR}/LICENSE RENAME copyright
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${CPACK_DEBIAN_${upper}_PACKAGE_NAME}
          COMPONENT ${component} EXCLUDE_FROM_ALL)
endforeach()

include(CPack)
