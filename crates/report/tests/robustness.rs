//! Arbitrary data, including NaN, infinities, extremes and odd text, never makes a chart panic
//! or produce malformed SVG.

mod common;

use cloudcache_report::{Axis, BarChart, Chart, LineChart, Scale, StackedAreaChart, ValueFormat};
use common::check_markup;
use proptest::prelude::*;

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => -1e6..1e6f64,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(0.0),
        1 => Just(f64::MAX),
        1 => Just(f64::MIN_POSITIVE),
        1 => any::<f64>(),
    ]
}

fn scale() -> impl Strategy<Value = Scale> {
    prop_oneof![Just(Scale::Linear), Just(Scale::Log2), Just(Scale::Log10)]
}

fn format() -> impl Strategy<Value = ValueFormat> {
    prop_oneof![
        Just(ValueFormat::Number),
        Just(ValueFormat::Count),
        Just(ValueFormat::Bytes),
        Just(ValueFormat::Percent),
        Just(ValueFormat::DurationNs),
    ]
}

fn axis() -> impl Strategy<Value = Axis> {
    (".{0,12}", scale(), format(), proptest::option::of((value(), value())), any::<bool>()).prop_map(
        |(title, scale, format, range, zero)| {
            let axis = Axis::new(title).scale(scale).format(format).include_zero(zero);
            match range {
                Some((a, b)) => axis.range(a, b),
                None => axis,
            }
        },
    )
}

fn assert_valid(svg: &str) -> Result<(), TestCaseError> {
    prop_assert!(svg.starts_with("<svg"));
    prop_assert!(check_markup(svg).is_ok(), "{:?}", check_markup(svg));
    prop_assert!(!svg.contains("NaN"));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn line_charts_never_break(
        x in axis(),
        y in axis(),
        series in proptest::collection::vec((".{0,10}", proptest::collection::vec((value(), value()), 0..20)), 0..10),
        (w, h) in (0u32..2000, 0u32..2000),
    ) {
        let mut chart = LineChart::new("t").x_axis(x).y_axis(y).size(w, h);
        for (name, points) in series {
            chart.add_series(name, points);
        }
        assert_valid(&chart.to_svg())?;
    }

    #[test]
    fn area_charts_never_break(
        x in axis(),
        y in proptest::option::of(axis()),
        xs in proptest::collection::vec(value(), 0..20),
        series in proptest::collection::vec((".{0,10}", proptest::collection::vec(value(), 0..25)), 0..10),
        step in any::<bool>(),
        normalized in any::<bool>(),
        end in proptest::option::of(value()),
    ) {
        let mut chart = StackedAreaChart::new("t").x_axis(x).x_values(xs).step(step).normalized(normalized);
        if let Some(y) = y {
            chart = chart.y_axis(y);
        }
        if let Some(end) = end {
            chart = chart.x_end(end);
        }
        for (name, values) in series {
            chart.add_series(name, values);
        }
        assert_valid(&chart.to_svg())?;
    }

    #[test]
    fn bar_charts_never_break(
        y in axis(),
        categories in proptest::collection::vec(".{0,30}", 0..30),
        series in proptest::collection::vec((".{0,10}", proptest::collection::vec(value(), 0..30)), 0..10),
        labels in proptest::option::of(any::<bool>()),
        (w, h) in (0u32..2000, 0u32..2000),
    ) {
        let mut chart = BarChart::new("t").y_axis(y).categories(categories).size(w, h);
        if let Some(on) = labels {
            chart = chart.value_labels(on);
        }
        for (name, values) in series {
            chart.add_series(name, values);
        }
        assert_valid(&chart.to_svg())?;
    }
}
