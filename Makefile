# The C libraries: `make` builds libutimer.so / libutimer.a and the drop-in
# libutimer_posix.so (release), `make install` installs them with
# include/utimer.h and utimer.pc under PREFIX (default /usr/local; DESTDIR
# for staging), `make uninstall` removes them. Then:
#   cc prog.c $(pkg-config --cflags --libs utimer)      # utimer's own C API
#   LD_PRELOAD=libutimer_posix.so ./prog                # an unmodified program
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
CARGO ?= cargo
TARGET_DIR ?= $(or $(CARGO_TARGET_DIR),target)
VERSION := 0.1.0
BUILT := $(TARGET_DIR)/release

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
	install -m 644 crates/utimer-capi/include/utimer.h $(DESTDIR)$(INCLUDEDIR)/utimer.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    crates/utimer-capi/utimer.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/utimer.pc

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libutimer.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libutimer.so.0 \
	    $(DESTDIR)$(LIBDIR)/libutimer.so $(DESTDIR)$(LIBDIR)/libutimer.a \
	    $(DESTDIR)$(LIBDIR)/libutimer_posix.so \
	    $(DESTDIR)$(INCLUDEDIR)/utimer.h $(DESTDIR)$(PKGCONFIGDIR)/utimer.pc
