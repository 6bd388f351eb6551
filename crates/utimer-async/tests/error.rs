//! `error::Error`, as `tokio::time::error::Error`: constructors,
//! predicates, messages and traits.

use utimer_async::error::{Elapsed, Error};

#[test]
fn each_kind_answers_its_own_predicate_and_tokios_message() {
    let cases = [
        (
            Error::shutdown(),
            [true, false, false],
            "the timer is shutdown, must be called from the context of Tokio runtime",
        ),
        (
            Error::at_capacity(),
            [false, true, false],
            "timer is at capacity and cannot create a new entry",
        ),
        (
            Error::invalid(),
            [false, false, true],
            "timer duration exceeds maximum duration",
        ),
    ];
    for (e, kinds, msg) in cases {
        assert_eq!([e.is_shutdown(), e.is_at_capacity(), e.is_invalid()], kinds);
        assert_eq!(e.to_string(), msg);
    }
}

#[test]
fn it_is_a_copyable_comparable_std_error() {
    let e = Error::invalid();
    let copy = e;
    assert_eq!(e, copy);
    assert_ne!(Error::shutdown(), Error::at_capacity());
    #[allow(clippy::clone_on_copy)]
    let cloned = e.clone();
    assert_eq!(cloned, Error::invalid());
    let boxed: Box<dyn std::error::Error + Send + Sync + 'static> = Box::new(e);
    assert!(boxed.source().is_none());
    assert!(format!("{e:?}").contains("Invalid"));
    // `Elapsed` is in the same module, as in tokio.
    fn is_error<E: std::error::Error>() {}
    is_error::<Elapsed>();
}
