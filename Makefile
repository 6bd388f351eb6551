# The C libraries: `make` builds libutimer.so / libutimer.a and the drop-in
# libutimer_posix.so (release), `make install` installs them, stripped of
# debug info (STRIP=true keeps it), with include/utimer.h and utimer.pc
# under PREFIX (default /usr/local; DESTDIR for staging), `make uninstall`
# removes them. Then:
#   cc prog.c $(pkg-config --cflags --libs utimer)      # utimer's own C API
#   LD_PRELOAD=libutimer_posix.so ./prog                # an unmodified program
#
# The dynamic loader looks for libutimer.so.0 in its own directories only.
# `sudo make install` (root, no DESTDIR) runs ldconfig, which is enough
# where the system lists /usr/local/lib (Debian and Ubuntu do). For another
# PREFIX, tell pkg-config where utimer.pc is, and the loader where the
# library is in one of three ways (`make install` prints these steps when
# the loader would not find it):
#   export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
#   LD_LIBRARY_PATH=$PREFIX/lib ./prog                                     # 1. when run
#   cc prog.c $(pkg-config --cflags --libs utimer) -Wl,-rpath,$PREFIX/lib  # 2. built in
#   echo $PREFIX/lib | sudo tee /etc/ld.so.conf.d/utimer.conf && sudo ldconfig  # 3. for all
# and preload the drop-in by its path: LD_PRELOAD=$PREFIX/lib/libutimer_posix.so.
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CARGO ?= cargo
STRIP ?= strip
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
VERSION := 0.1.0
BUILT := $(TARGET_DIR)/release

# The libraries are stripped as distributions ship them (the release
# profile keeps line tables, for profiling): the shared ones keep their
# dynamic symbols, the archive its symbol table. Then, for a real install
# (no DESTDIR), ldconfig as root, and the loader steps if it would still
# not find the library.
.PHONY: all install uninstall
all:
	$(CARGO) build --release -p utimer-capi -p utimer-posix

install: all
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 755 $(BUILT)/libutimer_capi.so $(DESTDIR)$(LIBDIR)/libutimer.so.$(VERSION)
	ln -sf libutimer.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libutimer.so.0
	ln -sf libutimer.so.0 $(DESTDIR)$(LIBDIR)/libutimer.so
	install -m 644 $(BUILT)/libutimer_capi.a $(DESTDIR)$(LIBDIR)/libutimer.a
	install -m 755 $(BUILT)/libutimer_posix.so $(DESTDIR)$(LIBDIR)/libutimer_posix.so
	$(STRIP) --strip-unneeded -R .comment -R .note $(DESTDIR)$(LIBDIR)/libutimer.so.$(VERSION) \
	    $(DESTDIR)$(LIBDIR)/libutimer_posix.so
	$(STRIP) --strip-debug -R .comment $(DESTDIR)$(LIBDIR)/libutimer.a
	install -m 644 crates/utimer-capi/include/utimer.h $(DESTDIR)$(INCLUDEDIR)/utimer.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    crates/utimer-capi/utimer.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/utimer.pc
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then ldconfig 2>/dev/null || true; fi
	@if [ -z "$(DESTDIR)" ] && ! { ldconfig -p || /sbin/ldconfig -p; } 2>/dev/null | \
	    grep -qF '=> $(LIBDIR)/libutimer.so.0'; then \
	  echo "Installed in $(LIBDIR), where the dynamic loader does not look. Build and run with:"; \
	  echo "  export PKG_CONFIG_PATH=$(PKGCONFIGDIR)"; \
	  echo "  LD_LIBRARY_PATH=$(LIBDIR) ./prog                    # when run, or"; \
	  echo "  cc prog.c \$$(pkg-config --cflags --libs utimer) -Wl,-rpath,$(LIBDIR)   # built in, or"; \
	  echo "  echo $(LIBDIR) | sudo tee /etc/ld.so.conf.d/utimer.conf && sudo ldconfig"; \
	  echo "  LD_PRELOAD=$(LIBDIR)/libutimer_posix.so ./program  # the drop-in"; \
	fi

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libutimer.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libutimer.so.0 \
	    $(DESTDIR)$(LIBDIR)/libutimer.so $(DESTDIR)$(LIBDIR)/libutimer.a \
	    $(DESTDIR)$(LIBDIR)/libutimer_posix.so \
	    $(DESTDIR)$(INCLUDEDIR)/utimer.h $(DESTDIR)$(PKGCONFIGDIR)/utimer.pc
