//! The inverse lease calculation: a monthly instalment and a period give the amount that can
//! be financed, `amount = instalment × 100 / factor(period)`, in decimal arithmetic, rounded
//! half away from zero to cents.

use std::collections::BTreeMap;

use rust_decimal::{Decimal, RoundingStrategy};

use crate::vocabulary::field_errors::FieldErrors;

pub const DEFAULT_MONTHLY_INSTALMENT: Decimal = Decimal::from_parts(299, 0, 0, false, 0);
pub const DEFAULT_PERIOD: u32 = 84;

/// The result of an inverse calculation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InverseCalculation {
    pub financing_amount: Decimal,
    pub monthly_instalment: Decimal,
    pub period: u32,
}

/// Factors per period in months.
#[derive(Debug, Clone)]
pub struct Factors(BTreeMap<u32, Decimal>);

impl Factors {
    pub fn new(factors: BTreeMap<u32, Decimal>) -> Self {
        Factors(factors)
    }

    pub fn periods(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.keys().copied()
    }

    /// Parses the raw path values (absent → defaults) and calculates, or names what is wrong.
    pub fn inverse(
        &self,
        monthly_instalment: Option<&str>,
        period: Option<&str>,
    ) -> Result<InverseCalculation, FieldErrors> {
        let mut errors = FieldErrors::new();
        let instalment = match monthly_instalment {
            None => Some(DEFAULT_MONTHLY_INSTALMENT),
            Some(raw) => match raw.trim().parse::<Decimal>() {
                Ok(value) if value > Decimal::ZERO && value.scale() <= 2 => Some(value),
                Ok(value) if value > Decimal::ZERO => {
                    errors
                        .entry("monthlyInstalment".into())
                        .or_default()
                        .push("The monthly instalment has at most two decimals.".into());
                    None
                }
                _ => {
                    errors
                        .entry("monthlyInstalment".into())
                        .or_default()
                        .push("The monthly instalment must be a number greater than 0.".into());
                    None
                }
            },
        };
        let supported = || self.periods().map(|p| p.to_string()).collect::<Vec<_>>().join(", ");
        let period = match period {
            None => Some(DEFAULT_PERIOD),
            Some(raw) => match raw.trim().parse::<u32>() {
                Ok(p) if self.0.contains_key(&p) => Some(p),
                _ => {
                    errors
                        .entry("period".into())
                        .or_default()
                        .push(format!("The period must be one of {} months.", supported()));
                    None
                }
            },
        };
        let (Some(monthly_instalment), Some(period)) = (instalment, period) else { return Err(errors) };
        let Some(factor) = self.0.get(&period) else {
            errors
                .entry("period".into())
                .or_default()
                .push(format!("The period must be one of {} months.", supported()));
            return Err(errors);
        };
        let financing_amount = (monthly_instalment * Decimal::ONE_HUNDRED / factor)
            .round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero);
        Ok(InverseCalculation { financing_amount, monthly_instalment, period })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn factors() -> Factors {
        Factors::new(Config::load_with(None, &[]).unwrap().leasing.factors)
    }

    #[test]
    fn the_specification_example() {
        let result = factors().inverse(None, None).unwrap();
        assert_eq!(result.financing_amount.to_string(), "20340.14");
        assert_eq!(result.monthly_instalment, Decimal::from(299));
        assert_eq!(result.period, 84);
    }

    #[test]
    fn every_default_period() {
        let f = factors();
        let amount = |i: &str, p: &str| f.inverse(Some(i), Some(p)).unwrap().financing_amount.to_string();
        assert_eq!(amount("299", "48"), "12943.72"); // 29900 / 2.31 = 12943.722...
        assert_eq!(amount("299", "60"), "15654.45"); // 29900 / 1.91 = 15654.450...
        assert_eq!(amount("299", "72"), "18231.71"); // 29900 / 1.64 = 18231.707...
        assert_eq!(amount("100.50", "84"), "6836.73"); // 10050 / 1.47 = 6836.734...
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        // With factor 8, 0.01 × 100 / 8 = 0.125 lands exactly on a half cent: 0.13, where
        // banker's rounding would give 0.12; 0.03 × 100 / 8 = 0.375 → 0.38.
        let f = Factors::new([(12, Decimal::from(8))].into_iter().collect());
        assert_eq!(f.inverse(Some("0.01"), Some("12")).unwrap().financing_amount.to_string(), "0.13");
        assert_eq!(f.inverse(Some("0.03"), Some("12")).unwrap().financing_amount.to_string(), "0.38");
    }

    #[test]
    fn bad_input_names_the_field() {
        let f = factors();
        for (instalment, period, field) in [
            ("0", "84", "monthlyInstalment"),
            ("-5", "84", "monthlyInstalment"),
            ("abc", "84", "monthlyInstalment"),
            ("1.001", "84", "monthlyInstalment"),
            ("299", "36", "period"),
            ("299", "x", "period"),
        ] {
            let errors = f.inverse(Some(instalment), Some(period)).unwrap_err();
            assert!(errors.contains_key(field), "{instalment}/{period}: {errors:?}");
        }
    }
}
